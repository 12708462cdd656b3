// Package collectortest runs the built acp-guard against the
// OpenTelemetry Collector's own OTLP receiver (go.opentelemetry.io/
// collector/receiver/otlpreceiver), over OTLP/HTTP and OTLP/gRPC. It is a
// module of its own so that the collector's dependencies (about 55
// modules) stay out of acp-guard's go.mod; `make test-collector` runs it.
package collectortest

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// acpGuard builds acp-guard from the repository (two directories up) with
// the repository's own go.mod, with OTLP over gRPC (-tags otlpgrpc) beside
// the default OTLP/HTTP exporter, so that the Collector receives both.
func acpGuard(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "acp-guard")
	cmd := exec.Command("go", "build", "-tags", "otlpgrpc", "-o", bin, "./cmd/acp-guard")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building acp-guard: %v\n%s", err, out)
	}
	return bin
}

// freeAddr is a 127.0.0.1 address nobody listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// collector starts the Collector's OTLP receiver on HTTP and gRPC,
// feeding two sinks; it stops at the end of the test.
func collector(t *testing.T) (httpAddr, grpcAddr string, traces *consumertest.TracesSink, metrics *consumertest.MetricsSink) {
	t.Helper()
	httpAddr, grpcAddr = freeAddr(t), freeAddr(t)
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = httpAddr
	cfg.Protocols.GRPC.GetOrInsertDefault().NetAddr.Endpoint = grpcAddr
	traces, metrics = new(consumertest.TracesSink), new(consumertest.MetricsSink)
	ctx := context.Background()
	set := receivertest.NewNopSettings(f.Type())
	tr, err := f.CreateTraces(ctx, set, cfg, traces)
	if err != nil {
		t.Fatal(err)
	}
	mr, err := f.CreateMetrics(ctx, set, cfg, metrics)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(ctx, componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	if err := mr.Start(ctx, componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = tr.Shutdown(ctx)
		_ = mr.Shutdown(ctx)
	})
	return httpAddr, grpcAddr, traces, metrics
}

// session runs one guarded session of the demo agent failing with a
// provider overload: initialize, session/new, one prompt carrying the
// client's trace context, its answer; then the end of input and exit.
func session(bin, stateDir string, env []string, traceparent string) error {
	cmd := exec.Command(bin, "--state-dir", stateDir, "--", bin, "demo-agent",
		"--scenario", "claude-error", "--agent-name", "@zed-industries/claude-agent-acp")
	cmd.Env = append(cleanEnv(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, _ := cmd.StdinPipe()
	outR, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	dog := time.AfterFunc(60*time.Second, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }) // hang guard only
	defer dog.Stop()
	out := bufio.NewReader(outR)
	defer func() {
		in.Close()
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
	}()
	await := func(id string) error {
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				return fmt.Errorf("no answer to %s: %v\n%s", id, err, stderr.String())
			}
			// An answer (the initialize result's _meta may name a method).
			if strings.HasPrefix(line, `{"jsonrpc":"2.0","id":`+id+`,"result"`) || strings.HasPrefix(line, `{"jsonrpc":"2.0","id":`+id+`,"error"`) {
				return nil
			}
		}
	}
	for i, frame := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[{"type":"text","text":"hi"}],"_meta":{"traceparent":%q}}}`, traceparent),
	} {
		fmt.Fprintln(in, frame)
		if err := await(fmt.Sprint(i + 1)); err != nil {
			return err
		}
	}
	return nil
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, "ACP_GUARD_") {
			env = append(env, kv)
		}
	}
	return env
}

// Two guarded agents per protocol export to one Collector: every metric
// arrives once per process (distinct service.instance.id, so nothing
// overwrites), and each turn span is a child of the client's span.
func TestCollectorReceivesAFleet(t *testing.T) {
	bin := acpGuard(t)
	httpAddr, grpcAddr, traces, metrics := collector(t)
	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tp := "00-" + traceID + "-" + parent + "-01"
	var wg sync.WaitGroup
	// Two per protocol; over HTTP one plain, one gzip-compressed with
	// delta temporality.
	for _, env := range [][]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + httpAddr},
		{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + httpAddr, "OTEL_EXPORTER_OTLP_COMPRESSION=gzip", "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=delta"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + grpcAddr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + grpcAddr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
	} {
		wg.Add(1)
		dir := t.TempDir()
		go func() { // ends when its session does
			defer wg.Done()
			if err := session(bin, dir, env, tp); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()

	failures := map[string]int64{}    // service.instance.id → failures counted
	turnCounts := map[string]uint64{} // service.instance.id → turn.duration count
	for _, md := range metrics.AllMetrics() {
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			rm := md.ResourceMetrics().At(i)
			id := str(rm.Resource().Attributes(), "service.instance.id")
			if str(rm.Resource().Attributes(), "service.name") != "acp-guard" || id == "" {
				t.Errorf("resource: %v", rm.Resource().Attributes().AsRaw())
			}
			sms := rm.ScopeMetrics()
			for j := 0; j < sms.Len(); j++ {
				ms := sms.At(j).Metrics()
				for k := 0; k < ms.Len(); k++ {
					switch m := ms.At(k); m.Name() {
					case "acp_guard.provider.failures":
						for p := 0; p < m.Sum().DataPoints().Len(); p++ {
							failures[id] += m.Sum().DataPoints().At(p).IntValue()
						}
					case "acp_guard.turn.duration":
						for p := 0; p < m.Histogram().DataPoints().Len(); p++ {
							dp := m.Histogram().DataPoints().At(p)
							if dp.BucketCounts().Len() != dp.ExplicitBounds().Len()+1 {
								t.Errorf("turn.duration: %d buckets for %d bounds", dp.BucketCounts().Len(), dp.ExplicitBounds().Len())
							}
							turnCounts[id] += dp.Count()
						}
					}
				}
			}
		}
	}
	if len(failures) != 4 {
		t.Errorf("failures from %d service instances, want 4: %v", len(failures), failures)
	}
	for id, n := range failures {
		if n != 1 {
			t.Errorf("instance %s: %d failures, want 1", id, n)
		}
	}
	if len(turnCounts) != 4 {
		t.Errorf("turn.duration from %d service instances, want 4: %v", len(turnCounts), turnCounts)
	}
	for id, n := range turnCounts {
		if n != 1 {
			t.Errorf("instance %s: turn.duration count %d, want 1", id, n)
		}
	}
	turns := 0
	for _, td := range traces.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			sss := td.ResourceSpans().At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					s := spans.At(k)
					if s.Name() != "acp.session/prompt" {
						continue
					}
					turns++
					tid, pid := s.TraceID(), s.ParentSpanID()
					if hex.EncodeToString(tid[:]) != traceID || hex.EncodeToString(pid[:]) != parent {
						t.Errorf("turn span: trace %x parent %x, want %s %s", tid, pid, traceID, parent)
					}
					if v, _ := s.Attributes().Get("error.type"); v.Str() != "provider_overloaded" {
						t.Errorf("turn span error.type: %q", v.Str())
					}
				}
			}
		}
	}
	if turns != 4 {
		t.Errorf("turn spans: %d, want 4", turns)
	}
}

func str(m pcommon.Map, k string) string {
	v, ok := m.Get(k)
	if !ok {
		return ""
	}
	return v.Str()
}
