//go:build otlpgrpc && !nootel

package telemetry_test

import (
	"context"
	"net"
	"strings"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// grpcReceiver adds an OTLP/gRPC listener on 127.0.0.1 to r.
type grpcReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	r *receiver
}

func (g *grpcReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.r.mu.Lock()
	g.r.spans = append(g.r.spans, req.ResourceSpans...)
	g.r.mu.Unlock()
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type grpcMetrics struct {
	colmetricpb.UnimplementedMetricsServiceServer
	r *receiver
}

func (g *grpcMetrics) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	g.r.mu.Lock()
	g.r.metrics = append(g.r.metrics, req.ResourceMetrics...)
	g.r.mu.Unlock()
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

func newGRPCReceiver(t *testing.T) *receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{url: "http://" + ln.Addr().String()}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, &grpcReceiver{r: r})
	colmetricpb.RegisterMetricsServiceServer(srv, &grpcMetrics{r: r})
	// Serve returns when Stop (at cleanup) closes the listener.
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return r
}

// Over gRPC, a Cursor failure rewritten into a ProviderError: the turn
// span carries the classification and only the redacted excerpt; the
// session id is omitted when configured so.
func TestExportGRPCProviderError(t *testing.T) {
	t.Parallel()
	rcv := newGRPCReceiver(t)
	out, stderr := session(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.url, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"ACP_GUARD_OTEL_SESSION_ID=omit", "OTEL_SERVICE_NAME=guarded-cursor", "OTEL_RESOURCE_ATTRIBUTES=deployment.environment=test"},
		nil, "--scenario", "cursor-retriable")
	if !strings.Contains(out, `"providerError"`) {
		t.Fatalf("no ProviderError:\n%s\nstderr:\n%s", out, stderr)
	}
	spans, res := rcv.allSpans()
	if len(spans) != 1 {
		t.Fatalf("spans: got %d, want 1\nstderr:\n%s", len(spans), stderr)
	}
	r := attrMap(res[0])
	if r["service.name"] != "guarded-cursor" || r["deployment.environment"] != "test" {
		t.Errorf("resource: got %v, want OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES honoured", r)
	}
	s := spans[0]
	a := attrMap(s.Attributes)
	for k, want := range map[string]string{
		"acp_guard.outcome": "rewritten", "acp_guard.error.code": "agent_transport_lost", "acp_guard.error.class": "transient",
		"acp_guard.error.rule": "cursor.retriable_stream_reset.v1", "acp_guard.replay_safe": "true", "acp_guard.adapter": "cursor-acp",
		"rpc.jsonrpc.error_code": "-32603", "acp_guard.attempts": "1",
	} {
		if a[k] != want {
			t.Errorf("turn span %s: got %q, want %q", k, a[k], want)
		}
	}
	if ex := a["acp_guard.error.excerpt"]; ex == "" || len(ex) > 256 {
		t.Errorf("excerpt: got %q, want the bounded safe excerpt", ex)
	}
	if _, ok := a["acp.session.id_hash"]; ok {
		t.Error("session id exported although omitted")
	}
	if s.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("span status: got %v, want error", s.GetStatus())
	}
	if got := rcv.metric("acp_guard.provider.failures"); len(got) != 1 || got[0].value != 1 || got[0].attrs["error.type"] != "agent_transport_lost" || got[0].attrs["acp_guard.adapter"] != "cursor-acp" {
		t.Errorf("provider failures: got %v, want one agent_transport_lost for cursor-acp", got)
	}
}
