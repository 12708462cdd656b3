package guard_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// harness drives a Guard through a real Relay with virtual time.
type harness struct {
	t       *testing.T
	v       *transport.Virtual
	r       *transport.Relay
	reports []guard.TurnReport
	log     []policy.Record
}

func (h *harness) Append(r policy.Record) error { h.log = append(h.log, r); return nil }

func newHarness(t *testing.T, adapter string, doc policy.Document, fallback ...string) *harness {
	t.Helper()
	h := &harness{t: t, v: transport.NewVirtual(epoch)}
	g := guard.New(guard.Config{
		Identity: observers.Identity{Flag: adapter},
		Engine:   catalogue.Default(),
		Policy:   doc,
		Fallback: fallback,
		Events:   guard.Turns(func(r guard.TurnReport) { h.reports = append(h.reports, r) }),
	})
	h.r = transport.NewRelay(transport.Config{MaxLine: 1 << 20, Hooks: g}, h.v)
	return h
}

func (h *harness) client(format string, args ...any) {
	h.r.FromClient(transport.Line{Bytes: []byte(fmt.Sprintf(format, args...) + "\n")})
}

func (h *harness) agent(format string, args ...any) {
	h.r.FromAgent(transport.Line{Bytes: []byte(fmt.Sprintf(format, args...) + "\n")})
}

// clientFrames returns and clears what the client received.
func (h *harness) clientFrames() []string {
	var out []string
	for _, b := range h.v.TakeClient() {
		out = append(out, strings.TrimSuffix(string(b), "\n"))
	}
	return out
}

func (h *harness) agentFrames() []string {
	var out []string
	for _, b := range h.v.TakeAgent() {
		out = append(out, strings.TrimSuffix(string(b), "\n"))
	}
	return out
}

// start opens a session with models and sends prompt id 2.
func (h *harness) start() {
	h.client(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	h.agent(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1","models":{"availableModels":[{"modelId":"model-a","name":"A"},{"modelId":"model-b","name":"B"}],"currentModelId":"model-a"}}}`)
	h.client(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}`)
	h.clientFrames()
	h.agentFrames()
}

func msgChunk(text string) string {
	b, _ := json.Marshal(text)
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":` + string(b) + `}}}}`
}

func thought(text string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"` + text + `"}}}}`
}

const (
	endTurn  = `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`
	ctrlText = "Error: RetriableError: [unavailable] PING timed out"
)

// providerError decodes the providerError of an error response.
func providerError(t *testing.T, frame string) (code int, message string, pe map[string]any, data map[string]any) {
	t.Helper()
	var resp struct {
		Error *struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(frame), &resp); err != nil || resp.Error == nil {
		t.Fatalf("not an error response: %s (%v)", frame, err)
	}
	pe, _ = resp.Error.Data["providerError"].(map[string]any)
	if pe == nil {
		t.Fatalf("no providerError in %s", frame)
	}
	return resp.Error.Code, resp.Error.Message, pe, resp.Error.Data
}

func TestCursorControlChunkRewritten(t *testing.T) {
	h := newHarness(t, "cursor-acp", policy.Default())
	h.start()
	h.agent("%s", msgChunk(ctrlText))
	if got := h.clientFrames(); len(got) != 0 {
		t.Fatalf("control chunk reached the client: %q", got)
	}
	h.agent("%s", endTurn)
	got := h.clientFrames()
	if len(got) != 1 {
		t.Fatalf("client got %d frames, want exactly one: %q", len(got), got)
	}
	if strings.Contains(got[0], "PING timed out\"") && strings.Contains(got[0], `"message":"Error: RetriableError: [unavailable]`) {
		t.Errorf("raw assistant text in the message: %s", got[0])
	}
	code, msg, pe, _ := providerError(t, got[0])
	if code != -32603 || msg != "Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)" {
		t.Errorf("code %d message %q", code, msg)
	}
	for k, want := range map[string]any{
		"code": "agent_transport_lost", "class": "transient", "confidence": "high",
		"rule": "cursor.retriable_stream_reset.v1", "source": "cursor_acp", "providerId": "cursor-acp",
		"sessionId": "s1", "generation": 1.0, "replaySafe": true, "schema": guard.Schema,
	} {
		if pe[k] != want {
			t.Errorf("providerError.%s = %v, want %v", k, pe[k], want)
		}
	}
	if at, _ := pe["occurredAt"].(string); !strings.HasSuffix(at, "Z") {
		t.Errorf("occurredAt %q is not UTC", at)
	}
	if len(h.reports) != 1 || h.reports[0].Outcome != guard.OutcomeRewritten || h.reports[0].Suppressed != 1 {
		t.Errorf("reports = %+v", h.reports)
	}
}

func TestCursorTurns(t *testing.T) {
	for _, tt := range []struct {
		name      string
		adapter   string
		frames    []string
		want      string // "rewritten" | "passed"
		wantSafe  bool
		forwarded int // frames the client sees before the response
	}{
		{"observed incident: thought and Read File in flight", "cursor-acp", []string{
			thought("Reading"),
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read File","kind":"read","status":"in_progress"}}}`,
			msgChunk(ctrlText),
		}, "rewritten", false, 2},
		{"resumed: later text clears the marker", "cursor-acp", []string{msgChunk(ctrlText), msgChunk("Here is the answer")}, "passed", false, 1},
		{"stalled variant", "cursor-acp", []string{msgChunk("Error: RetriableError: Connection stalled")}, "rewritten", true, 0},
		{"other adapter never fires", "codex-acp", []string{msgChunk(ctrlText)}, "passed", false, 1},
		{"prose before the prefix", "cursor-acp", []string{msgChunk("Note: Error: RetriableError: x")}, "passed", false, 1},
		{"veto: context canceled", "cursor-acp", []string{msgChunk("Error: RetriableError: context canceled")}, "passed", false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.adapter, policy.Default())
			h.start()
			for _, f := range tt.frames {
				h.agent("%s", f)
			}
			if got := h.clientFrames(); len(got) != tt.forwarded {
				t.Fatalf("forwarded %d frames, want %d: %q", len(got), tt.forwarded, got)
			}
			h.agent("%s", endTurn)
			got := h.clientFrames()
			if len(got) != 1 {
				t.Fatalf("got %d responses: %q", len(got), got)
			}
			switch tt.want {
			case "passed":
				if got[0] != endTurn {
					t.Errorf("response changed: %s", got[0])
				}
			case "rewritten":
				_, _, pe, _ := providerError(t, got[0])
				if pe["replaySafe"] != tt.wantSafe {
					t.Errorf("replaySafe = %v, want %v", pe["replaySafe"], tt.wantSafe)
				}
			}
		})
	}
}

func TestCancelledTurnNeverRewritten(t *testing.T) {
	h := newHarness(t, "cursor-acp", policy.Default())
	h.start()
	h.agent("%s", msgChunk(ctrlText))
	h.client(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)
	resp := `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}`
	h.agent("%s", resp)
	if got := h.clientFrames(); len(got) != 1 || got[0] != resp {
		t.Errorf("client got %q, want the cancelled response untouched", got)
	}
}

func TestAgentErrorAnnotated(t *testing.T) {
	for _, tt := range []struct {
		name, errObj  string
		wantAgentData bool
	}{
		{"data object gains the key", `{"code":-32603,"message":"Internal error","data":{"message":"stream disconnected before completion: error sending request"}}`, false},
		{"no data", `{"code":-32603,"message":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}`, false},
		{"string data kept as agentData", `{"code":-32603,"message":"Internal error","data":"upstream said no"}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "codex-acp", policy.Default())
			h.start()
			h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, tt.errObj)
			got := h.clientFrames()
			if len(got) != 1 {
				t.Fatalf("got %q", got)
			}
			var orig struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal([]byte(tt.errObj), &orig)
			code, msg, pe, data := providerError(t, got[0])
			if code != orig.Code || msg != orig.Message {
				t.Errorf("agent's code/message changed: %d %q", code, msg)
			}
			if _, ok := data["agentData"]; ok != tt.wantAgentData {
				t.Errorf("agentData present = %v, want %v (%v)", ok, tt.wantAgentData, data)
			}
			if pe["recovery"].(map[string]any)["action"] != "stop" {
				t.Errorf("recovery = %v", pe["recovery"])
			}
			if h.reports[0].Outcome != guard.OutcomeAnnotated {
				t.Errorf("outcome %s", h.reports[0].Outcome)
			}
		})
	}
}

func retryPolicy() policy.Document {
	d := policy.Default()
	d.Transient = policy.ClassPolicy{
		Retry:       policy.Retry{Enabled: true, MaxRetries: 3, InitialIntervalSeconds: 5},
		OnExhausted: policy.OutcomeStop,
	}
	return d
}

const overloaded = `{"code":-32603,"message":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}`

func TestRetryThenSucceed(t *testing.T) {
	h := newHarness(t, "claude-agent-acp", retryPolicy())
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	notices := h.clientFrames()
	if len(notices) != 1 || !strings.Contains(notices[0], `"acpGuard":{"retry":`) || !strings.Contains(notices[0], "agent_thought_chunk") {
		t.Fatalf("want one retry notice, got %q", notices)
	}
	if !strings.Contains(notices[0], `"delayMs":5000`) {
		t.Errorf("first delay not 5s: %s", notices[0])
	}
	h.v.Advance(4 * time.Second)
	if got := h.agentFrames(); len(got) != 0 {
		t.Fatalf("retried before the delay: %q", got)
	}
	h.v.Advance(time.Second)
	sent := h.agentFrames()
	if len(sent) != 1 || !strings.Contains(sent[0], `"id":"acp-guard:1"`) || !strings.Contains(sent[0], `"prompt":[{"type":"text","text":"hi"}]`) {
		t.Fatalf("retry prompt = %q", sent)
	}
	// Second failure: 10 s.
	h.agent(`{"jsonrpc":"2.0","id":"acp-guard:1","error":%s}`, overloaded)
	if n := h.clientFrames(); len(n) != 1 || !strings.Contains(n[0], `"delayMs":10000`) {
		t.Fatalf("second notice = %q", n)
	}
	h.v.Advance(10 * time.Second)
	if sent := h.agentFrames(); len(sent) != 1 || !strings.Contains(sent[0], `"id":"acp-guard:2"`) {
		t.Fatalf("second retry = %q", sent)
	}
	h.agent("%s", msgChunk("Hello!"))
	h.agent(`{"jsonrpc":"2.0","id":"acp-guard:2","result":{"stopReason":"end_turn"}}`)
	got := h.clientFrames()
	// A recovered result says so: _meta.acpGuard.attempts (the frame is
	// otherwise the agent's).
	want := `{"jsonrpc":"2.0","id":2,"result":{"_meta":{"acpGuard":{"attempts":3}},"stopReason":"end_turn"}}`
	if len(got) != 2 || got[1] != want {
		t.Fatalf("client got %q, want the text then %s", got, want)
	}
	if len(h.reports) != 1 || h.reports[0].Outcome != guard.OutcomeRetried || h.reports[0].Attempts != 3 {
		t.Errorf("reports %+v", h.reports)
	}
}

func TestRetryExhaustedStops(t *testing.T) {
	h := newHarness(t, "claude-agent-acp", retryPolicy())
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	var delays []string
	for i := 1; i <= 3; i++ {
		n := h.clientFrames()
		if len(n) != 1 {
			t.Fatalf("attempt %d: frames %q", i, n)
		}
		var f struct {
			Params struct {
				Update struct {
					Meta map[string]map[string]map[string]any `json:"_meta"`
				} `json:"update"`
			} `json:"params"`
		}
		_ = json.Unmarshal([]byte(n[0]), &f)
		delays = append(delays, fmt.Sprint(f.Params.Update.Meta["acpGuard"]["retry"]["delayMs"]))
		h.v.Advance(time.Hour)
		h.agentFrames()
		h.agent(`{"jsonrpc":"2.0","id":"acp-guard:%d","error":%s}`, i, overloaded)
	}
	if strings.Join(delays, ",") != "5000,10000,20000" {
		t.Errorf("delays = %v, want 5s, 10s, 20s", delays)
	}
	got := h.clientFrames()
	if len(got) != 1 || !strings.Contains(got[0], `"id":2,`) {
		t.Fatalf("final = %q", got)
	}
	_, _, pe, _ := providerError(t, got[0])
	rec := pe["recovery"].(map[string]any)
	if rec["action"] != "stop" || rec["attempt"] != 3.0 || rec["maxRetries"] != 3.0 {
		t.Errorf("recovery = %v", rec)
	}
}

func TestTextThenFailNotRetried(t *testing.T) {
	h := newHarness(t, "claude-agent-acp", retryPolicy())
	h.start()
	h.agent("%s", msgChunk("partial answer"))
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	got := h.clientFrames()
	if len(got) != 2 {
		t.Fatalf("got %q", got)
	}
	_, _, pe, _ := providerError(t, got[1])
	if pe["replaySafe"] != false || pe["recovery"].(map[string]any)["reason"] != "unsafe" {
		t.Errorf("pe = %v", pe)
	}
	h.v.Advance(time.Hour)
	if sent := h.agentFrames(); len(sent) != 0 {
		t.Errorf("retried an unsafe turn: %q", sent)
	}
}

func TestEffectsBlockRetry(t *testing.T) {
	for _, method := range []string{"fs/write_text_file", "terminal/create", "session/request_permission"} {
		h := newHarness(t, "claude-agent-acp", retryPolicy())
		h.start()
		h.agent(`{"jsonrpc":"2.0","id":9,"method":%q,"params":{"sessionId":"s1"}}`, method)
		h.client(`{"jsonrpc":"2.0","id":9,"result":{}}`)
		h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
		h.v.Advance(time.Hour)
		if sent := h.agentFrames(); len(sent) != 1 { // only the client's response to id 9
			t.Errorf("%s: retried after an effect: %q", method, sent)
		}
	}
}

func TestCancelDuringWait(t *testing.T) {
	h := newHarness(t, "claude-agent-acp", retryPolicy())
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	h.clientFrames()
	// A blank chunk is no evidence: the wait holds.
	h.agent("%s", msgChunk(" \n"))
	h.client(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)
	got := h.clientFrames()
	want := `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}`
	if len(got) != 2 || got[1] != want {
		t.Fatalf("client got %q, want the blank chunk then %s", got, want)
	}
	h.v.Advance(time.Hour)
	for _, f := range h.agentFrames() {
		if strings.Contains(f, "session/prompt") {
			t.Errorf("timer fired after cancel: %s", f)
		}
	}
	if got := h.clientFrames(); len(got) != 0 {
		t.Errorf("second answer: %q", got)
	}
}

func TestUnknownErrorStops(t *testing.T) {
	h := newHarness(t, "codex-acp", retryPolicy())
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"something odd happened in the flux capacitor"}}`)
	got := h.clientFrames()
	_, _, pe, _ := providerError(t, got[0])
	if pe["class"] != "unclassified" || pe["code"] != "unclassified" {
		t.Errorf("pe = %v", pe)
	}
	h.v.Advance(time.Hour)
	if sent := h.agentFrames(); len(sent) != 0 {
		t.Errorf("retried an unclassified failure: %q", sent)
	}
}

func TestFallbackModel(t *testing.T) {
	h := newHarness(t, "claude-agent-acp", policy.Default(), "model-b")
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	sent := h.agentFrames()
	if len(sent) != 1 || !strings.Contains(sent[0], `"method":"session/set_model"`) || !strings.Contains(sent[0], `"modelId":"model-b"`) {
		t.Fatalf("want set_model to model-b, got %q", sent)
	}
	var id struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal([]byte(sent[0]), &id)
	// The switch is announced to the client.
	if n := h.clientFrames(); len(n) != 1 || !strings.Contains(n[0], "switching to model model-b") || !strings.Contains(n[0], `"action":"switch"`) {
		t.Fatalf("switch notice = %q", n)
	}
	h.agent(`{"jsonrpc":"2.0","id":%q,"result":{}}`, id.ID)
	sent = h.agentFrames()
	if len(sent) != 1 || !strings.Contains(sent[0], `"method":"session/prompt"`) {
		t.Fatalf("want the prompt again, got %q", sent)
	}
	_ = json.Unmarshal([]byte(sent[0]), &id)
	h.agent("%s", msgChunk("Answer from model-b."))
	h.agent(`{"jsonrpc":"2.0","id":%q,"result":{"stopReason":"end_turn"}}`, id.ID)
	got := h.clientFrames()
	want := `{"jsonrpc":"2.0","id":2,"result":{"_meta":{"acpGuard":{"attempts":2,"model":"model-b"}},"stopReason":"end_turn"}}`
	if len(got) != 2 || got[1] != want {
		t.Fatalf("client got %q, want the text then %s", got, want)
	}
}

func TestFallbackWithoutCandidatesStops(t *testing.T) {
	// A policy that recovers (the hard class waits for resets) and skips
	// transient failures, with no model to skip to: no_fallback. Without
	// any policy the same failure stops for want of one: no_policy.
	waits := policy.Default()
	waits.Hard.WaitForReset = policy.WaitForReset{Enabled: true, MaxWaitSeconds: 60}
	for _, tt := range []struct {
		name   string
		doc    policy.Document
		reason string
	}{
		{"policy without fallback models", waits, "no_fallback"},
		{"no policy", policy.Default(), "no_policy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "claude-agent-acp", tt.doc)
			h.start()
			h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
			if sent := h.agentFrames(); len(sent) != 0 {
				t.Fatalf("sent %q", sent)
			}
			got := h.clientFrames()
			_, _, pe, _ := providerError(t, got[0])
			if r := pe["recovery"].(map[string]any); r["action"] != "stop" || r["reason"] != tt.reason {
				t.Errorf("got recovery %v, want stop/%s", r, tt.reason)
			}
		})
	}
}

func TestAgentExitMidTurn(t *testing.T) {
	h := newHarness(t, "codex-acp", retryPolicy())
	h.start()
	h.r.Stderr("thread 'main' panicked at 'boom'")
	h.r.AgentExited(transport.ExitStatus{Code: 137, Signal: "SIGKILL"})
	got := h.clientFrames()
	if len(got) != 1 {
		t.Fatalf("got %q", got)
	}
	_, _, pe, data := providerError(t, got[0])
	if data["agentExit"] == nil || pe["recovery"].(map[string]any)["reason"] != "agent_exited" {
		t.Errorf("data %v", data)
	}
	if h.reports[0].Outcome != guard.OutcomeFailed {
		t.Errorf("outcome %s", h.reports[0].Outcome)
	}
}

func TestCancelDuringModelSwitch(t *testing.T) {
	h := newHarness(t, "claude-agent-acp", policy.Default(), "model-b")
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	sent := h.agentFrames()
	if len(sent) != 1 || !strings.Contains(sent[0], "session/set_model") {
		t.Fatalf("want set_model, got %q", sent)
	}
	h.client(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)
	h.agentFrames() // the forwarded cancel
	h.agent(`{"jsonrpc":"2.0","id":"acp-guard:1","result":{}}`)
	for _, f := range h.agentFrames() {
		if strings.Contains(f, "session/prompt") {
			t.Errorf("retried after the client cancelled: %s", f)
		}
	}
	want := `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}`
	if got := h.clientFrames(); len(got) != 2 || !strings.Contains(got[0], "switching to model") || got[1] != want {
		t.Errorf("client got %q, want the switch notice then %s", got, want)
	}
}

func TestTransportLossNeverSwitchesModels(t *testing.T) {
	h := newHarness(t, "cursor-acp", policy.Default(), "model-b")
	h.start()
	h.agent("%s", msgChunk(ctrlText))
	h.agent("%s", endTurn)
	if sent := h.agentFrames(); len(sent) != 0 {
		t.Fatalf("switched models on a transport loss: %q", sent)
	}
	got := h.clientFrames()
	_, _, pe, _ := providerError(t, got[0])
	if r := pe["recovery"].(map[string]any); r["reason"] != "same_provider_only" {
		t.Errorf("recovery = %v", r)
	}
}

// TestEmptyRetryIsNotARecovery: a retry answered at once with an empty
// end_turn (claude-agent-acp's stale answer after an error) must not reach
// the client as a success; the failure it was meant to recover is reported.
func TestEmptyRetryIsNotARecovery(t *testing.T) {
	h := newHarness(t, "claude-agent-acp", retryPolicy())
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	h.clientFrames()
	h.v.Advance(5 * time.Second)
	h.agentFrames()
	h.agent(`{"jsonrpc":"2.0","id":"acp-guard:1","result":{"stopReason":"end_turn","usage":{"totalTokens":0}}}`)
	got := h.clientFrames()
	if len(got) != 1 {
		t.Fatalf("client got %q", got)
	}
	_, _, pe, _ := providerError(t, got[0])
	if r := pe["recovery"].(map[string]any); r["reason"] != "empty_retry_result" || pe["code"] != "provider_overloaded" {
		t.Errorf("providerError %v", pe)
	}
}

// TestNewPromptSupersedesWait: a client that sends another prompt to the
// session while acp-guard waits to retry the first gets the first answered
// (with its failure) at once; the stale timer then does nothing.
func TestNewPromptSupersedesWait(t *testing.T) {
	h := newHarness(t, "claude-agent-acp", retryPolicy())
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	h.clientFrames()
	h.client(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	got := h.clientFrames()
	if len(got) != 1 || !strings.Contains(got[0], `"id":2,`) {
		t.Fatalf("client got %q, want the answer to prompt 2", got)
	}
	_, _, pe, _ := providerError(t, got[0])
	if r := pe["recovery"].(map[string]any); r["reason"] != "superseded" {
		t.Errorf("recovery %v", r)
	}
	h.agentFrames() // prompt 3, forwarded
	h.v.Advance(time.Hour)
	for _, f := range h.agentFrames() {
		if strings.Contains(f, "acp-guard:") {
			t.Errorf("stale retry sent: %s", f)
		}
	}
}

// TestAgentExitWhileHeld: the agent dies while the guard holds a prompt for
// its retry; the client is owed the failure recovery was for, classified,
// not an unclassified "agent exited".
func TestAgentExitWhileHeld(t *testing.T) {
	h := newHarness(t, "claude-agent-acp", retryPolicy())
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	h.clientFrames() // the retry notice
	h.r.AgentExited(transport.ExitStatus{Code: 1})
	got := h.clientFrames()
	if len(got) != 1 {
		t.Fatalf("got %q, want one answer", got)
	}
	_, _, pe, _ := providerError(t, got[0])
	if pe["code"] != "provider_overloaded" || pe["recovery"].(map[string]any)["reason"] != "agent_exited" {
		t.Errorf("providerError %v, want provider_overloaded stopped with reason agent_exited", pe)
	}
	h.v.Advance(time.Hour)
	if sent := h.agentFrames(); len(sent) != 0 {
		t.Errorf("retried after the agent exited: %q", sent)
	}
}
