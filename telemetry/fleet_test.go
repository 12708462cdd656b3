//go:build !nootel

package telemetry_test

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/telemetry"
)

// Telemetry for fleets: what an operator with many guarded
// agents and one collector needs — through the built binary.

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// Two guarded agents exporting to one collector give two series per
// metric: each process exports under its own service.instance.id, so
// their cumulative points never overwrite each other. The resource names
// the service, its version and the agent (as initialize named it); the
// duration histograms have bounds in seconds from 50 ms to an hour.
func TestTwoAgentsTwoSeries(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.url, "OTEL_METRIC_EXPORT_INTERVAL=600000"}
	t.Run("agents", func(t *testing.T) {
		for i := range 2 {
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				out, stderr := session(t, env, nil, "--scenario", "claude-error", "--agent-name", "@zed-industries/claude-agent-acp")
				if !strings.Contains(out, `"providerError"`) {
					t.Fatalf("no ProviderError:\n%s\nstderr:\n%s", out, stderr)
				}
			})
		}
	})
	adapter, _ := observers.Identity{AgentInfo: "@zed-industries/claude-agent-acp"}.Resolve()
	for _, name := range []string{"acp_guard.provider.failures", "acp_guard.turn.duration", "acp_guard.frames"} {
		instances := map[string]bool{}
		for _, p := range rcv.metric(name) {
			r := p.resource
			if !uuidRE.MatchString(r["service.instance.id"]) || r["service.name"] != "acp-guard" || r["service.version"] == "" ||
				r["acp_guard.agent"] != adapter || r["acp_guard.agent.name"] != "@zed-industries/claude-agent-acp" {
				t.Errorf("%s: resource %v", name, r)
			}
			instances[r["service.instance.id"]] = true
		}
		if len(instances) != 2 {
			t.Errorf("%s: series from %d service instances, want 2 (points: %v)", name, len(instances), rcv.metric(name))
		}
	}
	for _, p := range rcv.metric("acp_guard.provider.failures") {
		if p.value != 1 || p.attrs["error.type"] != "provider_overloaded" {
			t.Errorf("failures: %v, want one provider_overloaded per instance", p)
		}
	}
	for _, p := range rcv.metric("acp_guard.turn.duration") {
		if !slices.Equal(p.bounds, telemetry.SecondBuckets) || p.bounds[0] != 0.05 || p.bounds[len(p.bounds)-1] != 3600 {
			t.Errorf("turn.duration bounds: %v, want seconds 0.05 … 3600", p.bounds)
		}
	}
}

// The client's W3C trace context on session/prompt (_meta.traceparent,
// tracestate, baggage) makes the turn span a child of the client's span,
// and goes on to the agent in the same keys: with the prompt itself, its
// retry, and the model switch acp-guard sends (seen in the transcript of
// what the agent received). --otel-session-id raw exports the session id
// itself.
func TestClientTraceparentParentsTurn(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tp := "00-" + traceID + "-" + parentID + "-01"
	rec := filepath.Join(t.TempDir(), "session.jsonl")
	meta := fmt.Sprintf(`{"traceparent":%q,"tracestate":"vendor=opaque","baggage":"tenant=a"}`, tp)
	out, stderr := sessionMeta(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.url, "OTEL_METRIC_EXPORT_INTERVAL=600000"},
		[]string{"--policy", policyFile(t), "--fallback-models", "model-b", "--circuits", "off", "--record", rec, "--otel-session-id", "raw"},
		meta, "--scenario", "fail-model", "--agent-name", "@zed-industries/claude-agent-acp")
	if !strings.Contains(out, `"stopReason":"end_turn"`) {
		t.Fatalf("the turn did not recover:\n%s\nstderr:\n%s", out, stderr)
	}
	spans, _ := rcv.allSpans()
	var turn int = -1
	for i, s := range spans {
		if s.Name == "acp.session/prompt" {
			turn = i
		}
	}
	if turn < 0 {
		t.Fatalf("no turn span among %d", len(spans))
	}
	s := spans[turn]
	if hex.EncodeToString(s.TraceId) != traceID || hex.EncodeToString(s.ParentSpanId) != parentID {
		t.Errorf("turn span: trace %x parent %x, want trace %s parent %s", s.TraceId, s.ParentSpanId, traceID, parentID)
	}
	if got := attrMap(s.Attributes)["acp.session.id"]; got != rawSession {
		t.Errorf("raw session id: got %q, want %q", got, rawSession)
	}
	// What the agent received: every session/prompt and the model switch
	// carry the client's trace context.
	f, err := os.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	carried := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Dir string `json:"dir"`
			Msg struct {
				Method string `json:"method"`
				Params struct {
					Meta map[string]string `json:"_meta"`
				} `json:"params"`
			} `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Dir != "c2a" {
			continue
		}
		switch m := ev.Msg; m.Method {
		case "session/prompt", "session/set_model":
			if m.Params.Meta["traceparent"] == tp && m.Params.Meta["tracestate"] == "vendor=opaque" && m.Params.Meta["baggage"] == "tenant=a" {
				carried[m.Method]++
			} else {
				t.Errorf("%s reached the agent without the trace context: %v", m.Method, m.Params.Meta)
			}
		}
	}
	// The client's prompt, its retry and the retry on model-b; the switch.
	if carried["session/prompt"] != 3 || carried["session/set_model"] != 1 {
		t.Errorf("frames with the trace context: %v, want 3 prompts and 1 switch", carried)
	}
}

// A collector that never answers (accepts and holds the connection), a
// gRPC endpoint that is down: the flush at exit gets its deadline — 0.9 s,
// or OTEL_EXPORTER_OTLP_TIMEOUT when that is shorter — and the session
// ends. The deadline is asserted (a condition); the time the
// flush took is measured and logged.
func TestExitDelayBounded(t *testing.T) {
	t.Parallel()
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 64)
	go func() { // accepts and holds connections until the listener closes
		for {
			c, err := hung.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		hung.Close()
		for c := range accepted {
			c.Close()
		}
	}()
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := down.Addr().String()
	down.Close()
	flushed := regexp.MustCompile(`msg="telemetry flushed" deadline_ms=(\d+) took_ms=(\d+)`)
	for _, tt := range []struct {
		name     string
		env      []string
		deadline int
	}{
		{"hung http collector", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + hung.Addr().String()}, 900},
		{"grpc endpoint down", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + downAddr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, 900},
		{"hung, OTLP timeout 200 ms", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + hung.Addr().String(), "OTEL_EXPORTER_OTLP_TIMEOUT=200"}, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(strings.Join(tt.env, " "), "=grpc") && !telemetry.GRPCBuilt {
				t.Skip("OTLP/gRPC is not in this build (-tags otlpgrpc)")
			}
			out, stderr := session(t, tt.env, []string{"--log-level", "debug"}, "--scenario", "success")
			if !strings.Contains(out, `"stopReason":"end_turn"`) {
				t.Fatalf("session not answered:\n%s", out)
			}
			m := flushed.FindStringSubmatch(stderr)
			if m == nil {
				t.Fatalf("no flush line:\n%s", stderr)
			}
			if d, _ := strconv.Atoi(m[1]); d != tt.deadline {
				t.Errorf("flush deadline %d ms, want %d", d, tt.deadline)
			}
			t.Logf("%s: the flush at exit took %s ms (deadline %s ms)", tt.name, m[2], m[1])
		})
	}
}

// OTLP over http/json is in the specification but not in acp-guard's
// exporters, and gRPC is not in a build without -tags otlpgrpc: asking
// for either, or any other telemetry setting that cannot be used, costs
// one warning and the agent runs without telemetry.
func TestUnusableSettingTurnsTelemetryOff(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	for _, tt := range []struct{ name, env, want string }{
		{"http/json", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json", "http/json"},
		{"grpc not built", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "-tags otlpgrpc"},
		{"bad timeout", "OTEL_EXPORTER_OTLP_TIMEOUT=soon", "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{"bad header", "OTEL_EXPORTER_OTLP_HEADERS=no-equals-sign", "OTEL_EXPORTER_OTLP_HEADERS"},
		{"bad compression", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=zstd", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"},
		{"bad session mode", "ACP_GUARD_OTEL_SESSION_ID=plain", "ACP_GUARD_OTEL_SESSION_ID"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "grpc not built" && telemetry.GRPCBuilt {
				t.Skip("this build has OTLP/gRPC")
			}
			out, stderr := session(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.url, tt.env}, nil, "--scenario", "success")
			if !strings.Contains(out, `"stopReason":"end_turn"`) {
				t.Fatalf("the agent did not run:\n%s\nstderr:\n%s", out, stderr)
			}
			if n := strings.Count(stderr, "telemetry"); n != 1 || !strings.Contains(stderr, "telemetry off") || !strings.Contains(stderr, tt.want) {
				t.Errorf("want one warning naming %s, got:\n%s", tt.want, stderr)
			}
		})
	}
	if spans, _ := rcv.allSpans(); len(spans) != 0 || len(rcv.metric("acp_guard.frames")) != 0 {
		t.Errorf("exported with telemetry off: %d spans", len(spans))
	}
}

// An agent that crashes mid-turn: its last events are exported, and
// nothing is reported as dropped (events come only from the event loop,
// which is over before the telemetry closes).
func TestCrashDropsNothing(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	out, stderr := session(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.url}, []string{"--policy", policyFile(t)}, "--scenario", "crash")
	if !strings.Contains(out, `"agent_exited"`) {
		t.Fatalf("the crash was not answered:\n%s", out)
	}
	if strings.Contains(stderr, "events dropped") {
		t.Errorf("events reported dropped at a crash:\n%s", stderr)
	}
	if got := rcv.metric("acp_guard.telemetry.dropped"); len(got) != 0 {
		t.Errorf("dropped counter exported: %v", got)
	}
	spans, _ := rcv.allSpans()
	if len(spans) != 1 || attrMap(spans[0].Attributes)["acp_guard.outcome"] != "failed" {
		t.Errorf("the crashed turn's span: %d spans", len(spans))
	}
}
