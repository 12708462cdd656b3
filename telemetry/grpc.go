//go:build otlpgrpc && !nootel

package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// OTLP over gRPC, in a build with -tags otlpgrpc: the SDK's own gRPC
// exporters, which read the OTEL_EXPORTER_OTLP_* variables themselves
// (from the process environment). They link gRPC and the protobuf
// runtime, about 6 MB of binary (docs/PERFORMANCE.md).

// grpcBuilt: this build exports over gRPC too.
const grpcBuilt = true

func grpcTraceExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	return otlptracegrpc.New(ctx)
}

func grpcMetricExporter(ctx context.Context) (sdkmetric.Exporter, error) {
	return otlpmetricgrpc.New(ctx)
}
