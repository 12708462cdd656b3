//go:build !nootel

package telemetry

import (
	"context"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// provide builds the tracer and meter providers once, on the worker
// goroutine, when the agent's identity is known: at the first turn (the
// initialize answer came before it), or at Close. Their resource names
// the service, this pipeline (service.instance.id) and the agent.
func (w *worker) provide() {
	if w.provided {
		return
	}
	w.provided = true
	t := w.t
	res, err := resource.New(context.Background(),
		resource.WithAttributes(w.resourceAttrs()...),
		resource.WithFromEnv(), // OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME win
		resource.WithTelemetrySDK())
	if err != nil && res == nil {
		t.exportError(err)
		res = resource.Default()
	}
	t.tracer = tracenoop.NewTracerProvider().Tracer("")
	var meter metric.Meter = metricnoop.NewMeterProvider().Meter("")
	if t.spanExp != nil {
		// The batch processor never blocks End: a full queue drops spans.
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res),
			sdktrace.WithBatcher(t.spanExp, sdktrace.WithMaxQueueSize(2048)))
		t.tracer = t.tp.Tracer(scope)
	}
	if t.metricExp != nil {
		// The interval comes from OTEL_METRIC_EXPORT_INTERVAL (default 60s);
		// Close exports whatever is left.
		t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(t.metricExp)))
		meter = t.mp.Meter(scope)
	}
	if t.inst, err = newInstruments(meter); err != nil {
		t.exportError(err)
	}
}

// resourceAttrs are the resource's own attributes: the service, this
// pipeline, and the agent as identified so far.
func (w *worker) resourceAttrs() []attribute.KeyValue {
	s := w.t.set
	attrs := []attribute.KeyValue{
		attribute.String("service.name", orDefault(s.ServiceName, "acp-guard")),
		attribute.String("service.version", s.ServiceVersion),
		attribute.String("service.instance.id", w.t.instance),
		attribute.Int("process.pid", os.Getpid()),
		attribute.String("acp_guard.agent", w.adapter()),
	}
	if w.agentName != "" {
		attrs = append(attrs, attribute.String("acp_guard.agent.name", w.agentName))
	}
	if w.agentVersion != "" {
		attrs = append(attrs, attribute.String("acp_guard.agent.version", w.agentVersion))
	}
	return attrs
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// providerName is gen_ai.provider.name for an adapter: the provider
// whose API the agent speaks when the adapter says (the well-known values
// of the semantic conventions), else the adapter itself.
func providerName(adapter string) string {
	a := strings.ToLower(adapter)
	switch {
	case strings.Contains(a, "claude"):
		return "anthropic"
	case strings.Contains(a, "codex"):
		return "openai"
	case strings.Contains(a, "gemini"):
		return "gcp.gemini"
	case a == "":
		return "unknown"
	}
	return adapter
}
