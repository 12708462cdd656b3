//go:build !nootel

package telemetry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/observers"
)

// QueueSize bounds the events waiting for the worker; more are dropped.
const QueueSize = 4096

// Telemetry is one session pipeline's exporter: its Event method is a
// subscriber of the guard's event stream, called on the relay's event
// loop; Close is called once the relay returned.
type Telemetry struct {
	log      *slog.Logger
	set      Settings
	instance string // service.instance.id
	queue    chan event.Event
	done     chan struct{} // closed by Close: the worker drains and exits
	exited   chan struct{} // closed by the worker when it returns
	closed   atomic.Bool
	dropped  atomic.Int64 // events the full queue refused
	failures atomic.Int64 // export errors, the first one logged

	spanExp   sdktrace.SpanExporter // nil when traces are off
	metricExp sdkmetric.Exporter    // nil when metrics are off

	// Built by the worker when the agent's identity is known (provide),
	// read by Close after the worker returned.
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	tracer trace.Tracer
	inst   instruments
	w      *worker
}

// Frames are the relay's totals, added to acp_guard.frames at Close.
type Frames struct{ ClientToAgent, AgentToClient int64 }

// New builds the exporters and starts the worker. identity is the agent's
// identity known at start (flag or command); initialize's agentInfo
// refines it (event.AgentIdentified) before the first turn, and the
// resource — service.name, service.version, a service.instance.id unique
// to this pipeline, the agent — is built then. Nothing is exported, and
// no goroutine but the worker runs, until that moment.
func New(ctx context.Context, set Settings, log *slog.Logger, identity observers.Identity) (*Telemetry, error) {
	t := &Telemetry{log: log, set: set, queue: make(chan event.Event, QueueSize),
		done: make(chan struct{}), exited: make(chan struct{}), instance: newInstanceID()}
	if t.set.Flush <= 0 || t.set.Flush > MaxFlush {
		t.set.Flush = MaxFlush
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(t.exportError))
	var err error
	if set.Traces {
		if t.spanExp, err = traceExporter(ctx, set); err != nil {
			return nil, err
		}
	}
	if set.Metrics {
		if t.metricExp, err = metricExporter(ctx, set); err != nil {
			return nil, err
		}
	}
	t.w = newWorker(t, identity)
	// The worker exits when Close closes done (after draining the queue).
	go t.run()
	return t, nil
}

const scope = "github.com/acp-guard/acp-guard/telemetry"

// newInstanceID is a random UUID (version 4): service.instance.id, unique
// per pipeline, so that the series of concurrent acp-guard processes
// never overwrite each other.
func newInstanceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// traceExporter is the OTLP exporter of spans: over HTTP (otlphttp.go),
// or gRPC in a build with -tags otlpgrpc (FromEnv refuses grpc in a
// build without it).
func traceExporter(ctx context.Context, set Settings) (sdktrace.SpanExporter, error) {
	if set.TraceProto == ProtoGRPC {
		return grpcTraceExporter(ctx)
	}
	return newSpanExporter(set.Getenv)
}

func metricExporter(ctx context.Context, set Settings) (sdkmetric.Exporter, error) {
	if set.MetricProto == ProtoGRPC {
		return grpcMetricExporter(ctx)
	}
	return newMetricExporter(set.Getenv)
}

// exportError is the SDK's error handler: the first failure is logged,
// later ones only counted (a dead collector costs one log line).
func (t *Telemetry) exportError(err error) {
	if t.failures.Add(1) == 1 {
		t.log.Warn("telemetry export failed; further failures are not logged", "err", err)
	}
}

// Event is the telemetry's subscriber of the guard's event stream: it
// queues e for the worker and returns, never waiting; a full queue drops
// the event and counts it. Events after Close are ignored (the session is
// over; nothing is lost that was not already flushed).
func (t *Telemetry) Event(e event.Event) {
	if t.closed.Load() {
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
// exporters — within Settings.Flush (at most MaxFlush) of its call, or
// before ctx ends if that is sooner, whatever the collector does. Export
// errors and a flush cut short are logged like any export error (the
// first one only); the error returned says only that the deadline came
// first.
func (t *Telemetry) Close(ctx context.Context, f Frames) error {
	if t.closed.Swap(true) {
		return nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, t.set.Flush)
	defer cancel()
	close(t.done)
	select {
	case <-t.exited:
	case <-ctx.Done():
		t.exportError(errFlush)
		return errFlush
	}
	t.w.provide() // a session without a turn still reports its frames
	t.w.endOpen(time.Now())
	t.inst.frames.Add(ctx, f.ClientToAgent, metric.WithAttributes(attribute.String("acp_guard.direction", "c2a")))
	t.inst.frames.Add(ctx, f.AgentToClient, metric.WithAttributes(attribute.String("acp_guard.direction", "a2c")))
	if n := t.dropped.Load(); n > 0 {
		t.inst.dropped.Add(ctx, n)
		t.log.Warn("telemetry events dropped (queue full)", "dropped", n)
	}
	var wg sync.WaitGroup
	var errs [2]error
	if t.tp != nil {
		wg.Add(1)
		go func() { defer wg.Done(); errs[0] = t.tp.Shutdown(ctx) }() // returns when the flush does or ctx ends
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
	t.log.Debug("telemetry flushed", "deadline_ms", t.set.Flush.Milliseconds(), "took_ms", time.Since(start).Milliseconds())
	if ctx.Err() != nil {
		t.exportError(errFlush)
		return errFlush
	}
	return nil
}

// FlushDeadline is how long Close may take at most.
func (t *Telemetry) FlushDeadline() time.Duration { return t.set.Flush }

// InstanceID is the service.instance.id this pipeline exports under.
func (t *Telemetry) InstanceID() string { return t.instance }

// Failures is how many export errors the SDK reported.
func (t *Telemetry) Failures() int64 { return t.failures.Load() }

// Dropped is how many events were dropped because the queue was full.
func (t *Telemetry) Dropped() int64 { return t.dropped.Load() }
