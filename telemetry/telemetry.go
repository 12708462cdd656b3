//go:build !nootel

package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/acp-guard/acp-guard/observers"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// QueueSize bounds the events waiting for the worker; more are dropped.
const QueueSize = 4096

// Telemetry is one process's exporter pipeline. Its methods that take
// events (the hooks, Attempts, Turn) are called from the relay goroutine;
// Close from the goroutine that ran the relay, after it returned.
type Telemetry struct {
	log      *slog.Logger
	set      Settings
	queue    chan event
	done     chan struct{} // closed by Close: the worker drains and exits
	exited   chan struct{} // closed by the worker when it returns
	closed   atomic.Bool
	dropped  atomic.Int64
	failures atomic.Int64 // export errors, the first one logged

	tp     *sdktrace.TracerProvider // nil when traces are off
	mp     *sdkmetric.MeterProvider // nil when metrics are off
	tracer trace.Tracer
	inst   instruments
	w      *worker // owned by the worker goroutine
}

// Frames are the relay's totals, added to acp_guard.frames at Close.
type Frames struct{ ClientToAgent, AgentToClient int64 }

// New builds the exporters and starts the worker. adapter is the identity
// known at start (flag or command); the initialize response may refine it.
func New(ctx context.Context, set Settings, log *slog.Logger, identity observers.Identity) (*Telemetry, error) {
	t := &Telemetry{log: log, set: set, queue: make(chan event, QueueSize), done: make(chan struct{}), exited: make(chan struct{})}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(t.exportError))
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", orDefault(set.ServiceName, "acp-guard")), attribute.String("service.version", set.ServiceVersion)),
		resource.WithFromEnv(), // OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME win
		resource.WithTelemetrySDK())
	if err != nil && res == nil {
		return nil, err
	}
	t.tracer = tracenoop.NewTracerProvider().Tracer("")
	var meter metric.Meter = metricnoop.NewMeterProvider().Meter("")
	if set.Traces {
		exp, err := traceExporter(ctx, set.TraceProto)
		if err != nil {
			return nil, err
		}
		// The batch processor never blocks End: a full queue drops spans.
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res),
			sdktrace.WithBatcher(exp, sdktrace.WithMaxQueueSize(2048)))
		t.tracer = t.tp.Tracer(scope)
	}
	if set.Metrics {
		exp, err := metricExporter(ctx, set.MetricProto)
		if err != nil {
			return nil, err
		}
		// The interval comes from OTEL_METRIC_EXPORT_INTERVAL (default 60s);
		// Close exports whatever is left.
		t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
		meter = t.mp.Meter(scope)
	}
	if t.inst, err = newInstruments(meter); err != nil {
		return nil, err
	}
	t.w = newWorker(t, identity)
	// The worker exits when Close closes done (after draining the queue).
	go t.run()
	return t, nil
}

const scope = "github.com/acp-guard/acp-guard/telemetry"

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func traceExporter(ctx context.Context, proto string) (sdktrace.SpanExporter, error) {
	if proto == ProtoGRPC {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}

func metricExporter(ctx context.Context, proto string) (sdkmetric.Exporter, error) {
	if proto == ProtoGRPC {
		return otlpmetricgrpc.New(ctx)
	}
	return otlpmetrichttp.New(ctx)
}

// exportError is the SDK's error handler: the first failure is logged,
// later ones only counted (a dead collector costs one log line).
func (t *Telemetry) exportError(err error) {
	if t.failures.Add(1) == 1 {
		t.log.Warn("telemetry export failed; further failures are not logged", "err", err)
	}
}

// emit queues e for the worker without ever waiting.
func (t *Telemetry) emit(e event) {
	if t.closed.Load() {
		t.dropped.Add(1)
		return
	}
	select {
	case t.queue <- e:
	default:
		t.dropped.Add(1)
	}
}

func (t *Telemetry) run() {
	defer close(t.exited)
	for {
		select {
		case e := <-t.queue:
			t.w.handle(e)
		case <-t.done:
			for {
				select {
				case e := <-t.queue:
					t.w.handle(e)
				default:
					return
				}
			}
		}
	}
}

var errFlush = errors.New("telemetry: not flushed before the deadline")

// Close stops taking events, lets the worker finish the queue, ends the
// spans of turns still open, adds the relay totals and flushes the
// exporters before ctx ends. Export errors and a flush cut short by ctx
// are logged like any export error (the first one only); the error
// returned says only that ctx ended first.
func (t *Telemetry) Close(ctx context.Context, f Frames) error {
	if t.closed.Swap(true) {
		return nil
	}
	close(t.done)
	select {
	case <-t.exited:
	case <-ctx.Done():
		t.exportError(errFlush)
		return errFlush
	}
	now := time.Now()
	t.w.endOpen(now)
	t.inst.frames.Add(ctx, f.ClientToAgent, metric.WithAttributes(attribute.String("direction", "c2a")))
	t.inst.frames.Add(ctx, f.AgentToClient, metric.WithAttributes(attribute.String("direction", "a2c")))
	if n := t.dropped.Load(); n > 0 {
		t.inst.dropped.Add(ctx, n)
		t.log.Warn("telemetry events dropped (queue full)", "dropped", n)
	}
	var wg sync.WaitGroup
	var errs [2]error
	if t.tp != nil {
		wg.Add(1)
		go func() { defer wg.Done(); errs[0] = t.tp.Shutdown(ctx) }() // ends when the flush does or ctx ends
	}
	if t.mp != nil {
		wg.Add(1)
		go func() { defer wg.Done(); errs[1] = t.mp.Shutdown(ctx) }() // same
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.exportError(err) // logged only if it is the first failure
		}
	}
	if ctx.Err() != nil {
		t.exportError(errFlush)
		return errFlush
	}
	return nil
}

// Failures is how many export errors the SDK reported.
func (t *Telemetry) Failures() int64 { return t.failures.Load() }

// Dropped is how many events were dropped because the queue was full.
func (t *Telemetry) Dropped() int64 { return t.dropped.Load() }
