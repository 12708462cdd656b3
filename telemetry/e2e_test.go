//go:build !nootel

package telemetry_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/internal/testbin"
	"github.com/acp-guard/acp-guard/observers"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// A prompt text and session id that must never reach the collector.
const (
	secretPrompt = "fix it with sk-ant-api03-DONOTEXPORTTHISKEY0123456789"
	rawSession   = "sess-1"
)

// session runs one guarded session: initialize, session/new, one prompt
// answered, stdin closed, stdout read to the end, exit awaited. It returns
// what the client read and acp-guard's stderr.
func session(t *testing.T, env []string, flags []string, agent ...string) (stdout, stderr string) {
	t.Helper()
	return sessionMeta(t, env, flags, "", agent...)
}

// sessionMeta is session with meta (raw JSON) as the prompt's _meta.
func sessionMeta(t *testing.T, env []string, flags []string, meta string, agent ...string) (stdout, stderr string) {
	t.Helper()
	p := acptest.Start(t, acptest.GuardArgv(t, flags, acptest.DemoAgent(t, agent...)...), acptest.Options{Env: append(cleanEnv(), env...)})
	var got strings.Builder
	read := func(id string) {
		for _, f := range p.Until(id) {
			got.Write(f.Raw)
		}
	}
	p.Send(acptest.Initialize(1))
	read("1")
	p.Send(acptest.SessionNew(2))
	read("2")
	text, _ := json.Marshal(secretPrompt)
	if meta != "" {
		meta = `,"_meta":` + meta
	}
	p.Send(acptest.Request(3, "session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":%s}]%s}`, rawSession, text, meta)))
	read("3")
	p.CloseStdin()
	got.Write(p.RestBytes())
	p.Wait()
	return got.String(), p.AllStderr()
}

// cleanEnv is the test's environment without OTEL_* variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, "ACP_GUARD_OTEL") {
			env = append(env, kv)
		}
	}
	return env
}

func policyFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "policy.json")
	doc := `{"version":1,
"transient":{"retry":{"enabled":true,"max_retries":1,"initial_interval_seconds":1},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"skip"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A retried failure and a fallback, exported over OTLP/HTTP: the turn
// span with its retry, wait and switch children, and the metrics.
func TestExportRetryAndFallback(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	out, stderr := session(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.url, "OTEL_METRIC_EXPORT_INTERVAL=600000"},
		// Without circuits, so that the retry is not the circuit's probe.
		[]string{"--policy", policyFile(t), "--fallback-models", "model-b", "--circuits", "off"},
		"--scenario", "fail-model", "--agent-name", "@zed-industries/claude-agent-acp")
	if !strings.Contains(out, `"stopReason":"end_turn"`) {
		t.Fatalf("the turn did not recover:\n%s\nstderr:\n%s", out, stderr)
	}
	spans, res := rcv.allSpans()
	byName := map[string][]int{}
	for i, s := range spans {
		byName[s.Name] = append(byName[s.Name], i)
	}
	turns := byName["acp.session/prompt"]
	if len(turns) != 1 {
		t.Fatalf("turn spans: got %d, want 1 (spans: %v)\nstderr:\n%s", len(turns), keys(byName), stderr)
	}
	turn := spans[turns[0]]
	if rattrs := attrMap(res[turns[0]]); rattrs["service.name"] != "acp-guard" {
		t.Errorf("service.name: got %q, want acp-guard", rattrs["service.name"])
	}
	adapter, _ := observers.Identity{AgentInfo: "@zed-industries/claude-agent-acp"}.Resolve()
	a := attrMap(turn.Attributes)
	for k, want := range map[string]string{
		"acp_guard.outcome": "retried", "acp_guard.attempts": "3", "acp_guard.adapter": adapter,
		"acp_guard.model": "model-b", "acp.stop_reason": "end_turn", "acp_guard.request_id": "3",
	} {
		if a[k] != want {
			t.Errorf("turn span %s: got %q, want %q (all: %v)", k, a[k], want, a)
		}
	}
	if h := a["acp.session.id_hash"]; len(h) != 16 || h == rawSession {
		t.Errorf("session id hash: got %q", h)
	}
	for name, want := range map[string]int{"acp_guard.retry": 2, "acp_guard.switch_model": 1, "acp_guard.wait": 1} {
		if got := len(byName[name]); got != want {
			t.Errorf("%s spans: got %d, want %d", name, got, want)
		}
		for _, i := range byName[name] {
			if !bytes.Equal(spans[i].ParentSpanId, turn.SpanId) || !bytes.Equal(spans[i].TraceId, turn.TraceId) {
				t.Errorf("%s span is not a child of the turn span", name)
			}
		}
	}
	if i := byName["acp_guard.switch_model"]; len(i) == 1 && attrMap(spans[i[0]].Attributes)["gen_ai.request.model"] != "model-b" {
		t.Errorf("switch span: %v", attrMap(spans[i[0]].Attributes))
	}
	// The turn's span holds its path through the state machine and its
	// two classified failures, in order: the events come from the guard's
	// event loop, not from the attempt log's writer.
	var path, failures []string
	for _, e := range turn.Events {
		a := attrMap(e.Attributes)
		switch e.Name {
		case "acp_guard.transition":
			path = append(path, a["acp_guard.from"]+" -"+a["acp_guard.event"]+"-> "+a["acp_guard.to"])
		case "acp_guard.failure":
			failures = append(failures, a["error.type"]+"/"+a["acp_guard.decision.action"])
		}
	}
	wantPath := []string{"active -retry-> retry_wait", "retry_wait -due-> retrying", "retrying -skip-> switching",
		"switching -switched-> retrying", "retrying -succeed-> answered"}
	if strings.Join(path, ", ") != strings.Join(wantPath, ", ") {
		t.Errorf("transitions on the turn span:\n got %v\nwant %v", path, wantPath)
	}
	if got := strings.Join(failures, ", "); got != "provider_overloaded/retry, provider_overloaded/skip" {
		t.Errorf("failures on the turn span: %s", got)
	}
	for k, want := range map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "anthropic",
		"gen_ai.request.model": "model-b", "gen_ai.agent.name": adapter} {
		if a[k] != want {
			t.Errorf("turn span %s: got %q, want %q", k, a[k], want)
		}
	}

	checkMetrics(t, rcv)
	for _, s := range rcv.everyString() {
		for _, secret := range []string{"sk-ant", "DONOTEXPORT", `=` + rawSession, "API Error", `"Overloaded"`, "Internal error"} {
			if strings.Contains(s, secret) {
				t.Errorf("sensitive text %q exported: %q", secret, s)
			}
		}
	}
}

func checkMetrics(t *testing.T, rcv *receiver) {
	t.Helper()
	sum := func(name string, match map[string]string) float64 {
		var n float64
	points:
		for _, p := range rcv.metric(name) {
			for k, v := range match {
				if p.attrs[k] != v {
					continue points
				}
			}
			n += p.value
		}
		return n
	}
	for _, c := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"acp_guard.provider.failures", map[string]string{"error.type": "provider_overloaded", "acp_guard.error.class": "transient",
			"gen_ai.request.model": "model-a", "gen_ai.provider.name": "anthropic", "acp_guard.phase": "prompt"}, 2},
		{"acp_guard.recoveries", map[string]string{"acp_guard.outcome": "retried"}, 1},
		{"acp_guard.notices", map[string]string{"acp_guard.action": "retry"}, 1},
		{"acp_guard.notices", map[string]string{"acp_guard.action": "switch"}, 1},
		{"acp_guard.model.switches", map[string]string{"gen_ai.request.model": "model-b", "acp_guard.result": "ok"}, 1},
		{"acp_guard.turn.duration", map[string]string{"acp_guard.outcome": "retried", "gen_ai.request.model": "model-b",
			"gen_ai.operation.name": "invoke_agent"}, 1},
		{"acp_guard.wait.duration", map[string]string{"acp_guard.error.class": "transient", "acp_guard.wait.result": "attempt"}, 1},
	} {
		if got := sum(c.name, c.match); got != c.want {
			t.Errorf("%s%v: got %v, want %v (points: %v)", c.name, c.match, got, c.want, rcv.metric(c.name))
		}
	}
	if c2a, a2c := sum("acp_guard.frames", map[string]string{"acp_guard.direction": "c2a"}), sum("acp_guard.frames", map[string]string{"acp_guard.direction": "a2c"}); c2a < 3 || a2c < 3 {
		t.Errorf("frames: got c2a %v, a2c %v; want at least 3 each", c2a, a2c)
	}
}

func keys(m map[string][]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A collector that refuses connections, or accepts and never answers,
// costs one log line; the session is answered and acp-guard exits.
func TestDeadCollector(t *testing.T) {
	t.Parallel()
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + refused.Addr().String()
	refused.Close()
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Accepts and holds connections until the listener closes; the test
	// goroutine owns conns only after hung.Close, so keep them local.
	accepted := make(chan net.Conn, 64)
	go func() {
		for {
			c, err := hung.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	for _, tt := range []struct{ name, url string }{{"refused", refusedURL}, {"hung", "http://" + hung.Addr().String()}} {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr := session(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + tt.url}, []string{"--grace", "1s"}, "--scenario", "success")
			if !strings.Contains(out, `"stopReason":"end_turn"`) {
				t.Fatalf("session not answered:\n%s", out)
			}
			if n := strings.Count(stderr, "telemetry"); n != 1 {
				t.Errorf("telemetry log lines: got %d, want 1:\n%s", n, stderr)
			}
			if !strings.Contains(stderr, "relay finished") {
				t.Errorf("acp-guard did not finish cleanly:\n%s", stderr)
			}
		})
	}
	hung.Close()
	for c := range accepted {
		conns = append(conns, c)
	}
}

// Off by default: no OTEL_* variables, no --otel, nothing exported and
// nothing logged about telemetry.
func TestOffByDefault(t *testing.T) {
	t.Parallel()
	_, stderr := session(t, nil, nil, "--scenario", "success")
	if strings.Contains(stderr, "telemetry") {
		t.Errorf("telemetry without configuration:\n%s", stderr)
	}
}

// SIGTERM while a prompt hangs: acp-guard answers the client, then flushes
// the turn's span and the metrics before it exits.
func TestFlushOnSignal(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	p := acptest.Start(t, acptest.GuardArgv(t, []string{"--grace", "2s"}, acptest.DemoAgent(t, "--scenario", "hang")...),
		acptest.Options{Env: append(cleanEnv(), "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.url, "OTEL_METRIC_EXPORT_INTERVAL=600000", "OTEL_BSP_SCHEDULE_DELAY=600000")})
	p.Send(acptest.Initialize(1), acptest.SessionNew(2))
	p.Until("1")
	p.Until("2")
	p.Send(acptest.Request(3, "session/prompt", `{"sessionId":"sess-1","prompt":[{"type":"text","text":"x"}]}`))
	// The prompt is in the guard's table once the agent has it; a frame
	// through the agent after it proves the order (test/mirror answers).
	p.Send(acptest.Request(4, "test/mirror", ""))
	p.Until("4")
	p.Signal(platform.SIGTERM)
	rest := p.RestBytes()
	p.Wait()
	if !strings.Contains(string(rest), `"id":3`) {
		t.Errorf("the hung prompt was not answered: %s", rest)
	}
	spans, _ := rcv.allSpans()
	if len(spans) != 1 || spans[0].Name != "acp.session/prompt" {
		t.Fatalf("spans after SIGTERM: got %d, want the one turn", len(spans))
	}
	if got := rcv.metric("acp_guard.frames"); len(got) == 0 {
		t.Error("metrics not flushed at exit")
	}
	t.Logf("turn outcome at exit: %s", attrMap(spans[0].Attributes)["acp_guard.outcome"])
}

// An auth failure whose provider message names a key and URLs: the only
// provider text exported is the ProviderError's safeExcerpt, exactly as the
// client received it; the agent's error message appears nowhere else.
func TestExportOnlyTheSafeExcerpt(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	out, stderr := session(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.url}, nil, "--scenario", "auth-error", "--agent-name", "codex-acp")
	var excerpt string
	for _, line := range strings.Split(out, "\n") {
		var f struct {
			Error struct {
				Message string `json:"message"`
				Data    struct {
					Message       string `json:"message"`
					ProviderError struct {
						SafeExcerpt string `json:"safeExcerpt"`
					} `json:"providerError"`
				} `json:"data"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(line), &f) == nil && f.Error.Data.ProviderError.SafeExcerpt != "" {
			excerpt = f.Error.Data.ProviderError.SafeExcerpt
		}
	}
	if excerpt == "" || !strings.Contains(out, "https://platform.openai.com/account/api-keys") {
		t.Fatalf("the scenario changed (no excerpt, or no URL in the message); the test proves nothing:\n%s", out)
	}
	spans, _ := rcv.allSpans()
	if len(spans) != 1 {
		t.Fatalf("spans: got %d, want 1\nstderr:\n%s", len(spans), stderr)
	}
	a := attrMap(spans[0].Attributes)
	if a["acp_guard.error.class"] != "hard" || a["acp_guard.outcome"] != "annotated" || a["acp_guard.error.excerpt"] != excerpt {
		t.Errorf("turn span: got %v, want an annotated hard failure with the client's safeExcerpt %q", a, excerpt)
	}
	for _, s := range rcv.everyString() {
		if strings.HasPrefix(s, "acp_guard.error.excerpt=") {
			continue
		}
		for _, text := range []string{"api-keys", "Incorrect API key", "Unauthorized"} {
			if strings.Contains(s, text) {
				t.Errorf("provider text %q exported outside the excerpt: %q", text, s)
			}
		}
	}
}
