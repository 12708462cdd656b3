//go:build !otlpgrpc && !nootel

package telemetry

import (
	"context"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func grpcTraceExporter(context.Context) (sdktrace.SpanExporter, error) { return nil, errNoGRPC }

func grpcMetricExporter(context.Context) (sdkmetric.Exporter, error) { return nil, errNoGRPC }
