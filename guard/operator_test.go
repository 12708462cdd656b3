package guard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// newActionHarness is newHarness with the attempt log kept (h.log) and,
// when board is not nil, held prompts published on it.
func newActionHarness(t *testing.T, doc policy.Document, board *held.Board, fallback ...string) *harness {
	t.Helper()
	h := &harness{t: t, v: transport.NewVirtual(epoch)}
	g := guard.New(guard.Config{
		Identity: observers.Identity{Flag: "claude-agent-acp"},
		Engine:   catalogue.Default(),
		Policy:   doc,
		Fallback: fallback,
		Attempts: h,
		Held:     board,
		Events:   guard.Turns(func(r guard.TurnReport) { h.reports = append(h.reports, r) }),
	})
	t.Cleanup(func() { g.Close() })
	h.r = transport.NewRelay(transport.Config{MaxLine: 1 << 20, Hooks: g}, h.v)
	return h
}

// recovery sends the client's _acp-guard/recovery request with id 7 and
// returns the frames the client got: notices, answers, then the answer to
// 7 last.
func (h *harness) recovery(session, action string) []string {
	h.client(`{"jsonrpc":"2.0","id":7,"method":"_acp-guard/recovery","params":{"sessionId":%q,"action":%q}}`, session, action)
	got := h.clientFrames()
	if len(got) == 0 || !strings.Contains(got[len(got)-1], `"id":7`) {
		h.t.Fatalf("the recovery request was not answered last: %q", got)
	}
	return got
}

func recoveryResult(t *testing.T, frame string) guard.RecoveryResult {
	t.Helper()
	var r struct {
		Result *guard.RecoveryResult `json:"result"`
	}
	if json.Unmarshal([]byte(frame), &r) != nil || r.Result == nil {
		t.Fatalf("not a result: %s", frame)
	}
	return *r.Result
}

func recoveryError(t *testing.T, frame string) (int, map[string]any) {
	t.Helper()
	var r struct {
		Error *struct {
			Code int `json:"code"`
			Data struct {
				AcpGuard map[string]any `json:"acpGuard"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(frame), &r) != nil || r.Error == nil {
		t.Fatalf("not an error: %s", frame)
	}
	return r.Error.Code, r.Error.Data.AcpGuard
}

// onlyAgentPrompts returns the session/prompt frames among the agent's.
func (h *harness) agentPrompts() []string {
	var out []string
	for _, f := range h.agentFrames() {
		if strings.Contains(f, `"method":"session/prompt"`) {
			out = append(out, f)
		}
		if strings.Contains(f, "_acp-guard/") {
			h.t.Errorf("the extension request reached the agent: %s", f)
		}
	}
	return out
}

// The client tells a prompt held in retry_wait to retry now: the retry
// goes out at once (not after the policy's 5 s), the answer says
// retry_wait → retrying, the client was told first, the attempt log
// records who asked, and the prompt is answered once.
func TestRecoveryRetryNow(t *testing.T) {
	h := newActionHarness(t, retryPolicy(), nil)
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	h.clientFrames() // the retry notice
	got := h.recovery("s1", held.ActionRetryNow)
	if len(got) != 2 || !strings.Contains(got[0], `"action":"retry_now"`) || !strings.Contains(got[0], `"by":"client"`) {
		t.Fatalf("want the action's notice, then the answer; got %q", got)
	}
	if r := recoveryResult(t, got[1]); r.PreviousState != "retry_wait" || r.State != "retrying" || string(r.RequestID) != "2" || r.Action != "retry_now" {
		t.Errorf("answer %+v, want retry_wait → retrying for request 2", r)
	}
	sent := h.agentPrompts()
	if len(sent) != 1 {
		t.Fatalf("want the retry at once, got %q", sent)
	}
	last := h.log[len(h.log)-1]
	if last.Decision.Reason != guard.ReasonRetryNow || last.By != guard.ByClient || last.Outcome != policy.AttemptScheduled {
		t.Errorf("attempt record %+v, want retry_now by client, scheduled", last)
	}
	var id struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal([]byte(sent[0]), &id)
	h.agent("%s", msgChunk("the answer"))
	h.agent(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`, id.ID)
	if got := h.clientFrames(); len(got) != 2 || !strings.Contains(got[1], `"id":2`) || !strings.Contains(got[1], `"end_turn"`) {
		t.Fatalf("want the retry's chunk and result for 2, got %q", got)
	}
	h.v.Advance(time.Hour)
	if sent := h.agentPrompts(); len(sent) != 0 {
		t.Errorf("the policy's timer sent another retry: %q", sent)
	}
	// Nothing is held any more.
	if code, data := recoveryError(t, h.recovery("s1", held.ActionRetryNow)[0]); code != -32002 || data["reason"] != "not_held" {
		t.Errorf("second retry_now: %d %v, want -32002 not_held", code, data)
	}
}

// Skip switches the held prompt to the next fallback model now.
func TestRecoverySkip(t *testing.T) {
	h := newActionHarness(t, retryPolicy(), nil, "model-b")
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	h.clientFrames()
	got := h.recovery("s1", held.ActionSkip)
	if r := recoveryResult(t, got[len(got)-1]); r.PreviousState != "retry_wait" || r.State != "switching" {
		t.Errorf("answer %+v, want retry_wait → switching", r)
	}
	sent := h.agentFrames()
	if len(sent) != 1 || !strings.Contains(sent[0], `"session/set_model"`) || !strings.Contains(sent[0], `"model-b"`) {
		t.Fatalf("want set_model model-b at once, got %q", sent)
	}
	if last := h.log[len(h.log)-1]; last.Decision.Reason != guard.ReasonSkipNow || last.By != guard.ByClient {
		t.Errorf("attempt record %+v, want skip_now by client", last)
	}
}

// Stop answers the held prompt with its failure now: recovery.reason
// stop_now, recovery.by client; no retry follows.
func TestRecoveryStop(t *testing.T) {
	h := newActionHarness(t, retryPolicy(), nil)
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	h.clientFrames()
	got := h.recovery("s1", held.ActionStop)
	if len(got) != 3 || !strings.Contains(got[0], `"action":"stop"`) {
		t.Fatalf("want the notice, the prompt's answer and the request's; got %q", got)
	}
	_, _, pe, _ := providerError(t, got[1])
	if rec := pe["recovery"].(map[string]any); rec["reason"] != guard.ReasonStopNow || rec["by"] != guard.ByClient || rec["action"] != "stop" {
		t.Errorf("recovery %v, want stop, stop_now by client", rec)
	}
	if pe["code"] != "provider_overloaded" {
		t.Errorf("code %v, want the failure being recovered", pe["code"])
	}
	if r := recoveryResult(t, got[2]); r.State != "action_required" {
		t.Errorf("answer %+v, want action_required", r)
	}
	h.v.Advance(time.Hour)
	if sent := h.agentPrompts(); len(sent) != 0 {
		t.Errorf("retried after stop: %q", sent)
	}
	if last := h.log[len(h.log)-1]; last.Decision.Reason != guard.ReasonStopNow || last.Outcome != policy.AttemptStopped {
		t.Errorf("attempt record %+v, want stop_now stopped", last)
	}
}

// Every request that cannot act is answered with an error naming why;
// nothing reaches the agent, and the held prompt stays held.
func TestRecoveryRefused(t *testing.T) {
	for _, tt := range []struct {
		name     string
		fallback []string
		fail     string // the agent's error for the prompt ("" : none yet)
		text     bool   // the turn streamed text before failing (not replay-safe)
		params   string
		code     int
		reason   string
		actions  string // the actions offered, when refused as not allowed
	}{
		{name: "nothing held yet", params: `{"sessionId":"s1","action":"retry_now"}`, code: -32002, reason: "not_held"},
		{name: "another session", fail: overloaded, params: `{"sessionId":"s2","action":"stop"}`, code: -32002, reason: "not_held"},
		{name: "unsafe turn is never held", fail: overloaded, text: true, params: `{"sessionId":"s1","action":"retry_now"}`, code: -32002, reason: "not_held"},
		{name: "unknown action", fail: overloaded, params: `{"sessionId":"s1","action":"later"}`, code: -32602, reason: "invalid_params"},
		{name: "no session", fail: overloaded, params: `{"action":"stop"}`, code: -32602, reason: "invalid_params"},
		{name: "params not an object", fail: overloaded, params: `[1]`, code: -32602, reason: "invalid_params"},
		{name: "skip without a fallback model", fail: overloaded, params: `{"sessionId":"s1","action":"skip"}`, code: -32602, reason: "not_allowed", actions: "[retry_now stop]"},
		{name: "skip on a lost transport", fallback: []string{"model-b"}, fail: `{"code":-32603,"message":"stream disconnected before completion"}`,
			params: `{"sessionId":"s1","action":"skip"}`, code: -32602, reason: "not_allowed", actions: "[retry_now stop]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newActionHarness(t, retryPolicy(), nil, tt.fallback...)
			h.start()
			if tt.text {
				h.agent("%s", msgChunk("partial"))
			}
			if tt.fail != "" {
				h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, tt.fail)
			}
			h.clientFrames()
			h.client(`{"jsonrpc":"2.0","id":7,"method":"_acp-guard/recovery","params":%s}`, tt.params)
			got := h.clientFrames()
			if len(got) != 1 {
				t.Fatalf("want one answer, got %q", got)
			}
			code, data := recoveryError(t, got[0])
			if code != tt.code || data["reason"] != tt.reason {
				t.Errorf("error %d %v, want %d %s", code, data, tt.code, tt.reason)
			}
			if tt.actions != "" {
				if a := data["actions"]; a == nil || strings.Join(strings.Fields(strings.Trim(strings.ReplaceAll(toString(a), ",", " "), "[]")), " ") != strings.Trim(tt.actions, "[]") {
					t.Errorf("actions offered %v, want %s", a, tt.actions)
				}
				if data["state"] != "retry_wait" {
					t.Errorf("state %v, want retry_wait (still held)", data["state"])
				}
			}
			if sent := h.agentPrompts(); len(sent) != 0 {
				t.Errorf("sent %q", sent)
			}
		})
	}
	// Sent as a notification, it is neither answered nor forwarded.
	h := newActionHarness(t, retryPolicy(), nil)
	h.client(`{"jsonrpc":"2.0","method":"_acp-guard/recovery","params":{"sessionId":"s1","action":"stop"}}`)
	if got, sent := h.clientFrames(), h.agentFrames(); len(got) != 0 || len(sent) != 0 {
		t.Errorf("a notification: client got %q, agent got %q; want nothing", got, sent)
	}
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return strings.ReplaceAll(string(b), `"`, "")
}

// The initialize result advertises the extension when the policy can
// hold prompts; otherwise (and when an acp-guard behind this one already
// did) the agent's bytes pass as they are.
func TestRecoveryAdvertised(t *testing.T) {
	const init = `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"x","version":"1"}}}`
	const nested = `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"_meta":{"acpGuard":{"recovery":{}}}}}`
	for _, tt := range []struct {
		name   string
		doc    policy.Document
		answer string
		want   string // in the client's frame ("" : unchanged)
	}{
		{"recovering policy", retryPolicy(), init, `"_meta":{"acpGuard":{"recovery":{"actions":["retry_now","skip","stop"],"method":"_acp-guard/recovery"}}}`},
		{"default policy", policy.Default(), init, ""},
		{"already advertised", retryPolicy(), nested, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newActionHarness(t, tt.doc, nil)
			h.client(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
			h.agent("%s", tt.answer)
			got := h.clientFrames()
			if len(got) != 1 {
				t.Fatalf("got %q", got)
			}
			switch {
			case tt.want == "" && got[0] != tt.answer:
				t.Errorf("changed: %s", got[0])
			case tt.want != "" && !strings.Contains(got[0], tt.want):
				t.Errorf("got %s, want %s in it", got[0], tt.want)
			}
		})
	}
}

// With a board, a prompt held for held.PublishAfter is published with the
// actions it offers; an operator's request written on its entry is taken
// (offline there is no watch: the next refresh finds it) and its result
// is written back; the entry then leaves the held list.
func TestHeldPromptPublishedAndMoved(t *testing.T) {
	st, err := held.OpenStore("file", held.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	board := held.NewBoard(st, nil)
	t.Cleanup(func() { board.Close() })
	doc := retryPolicy()
	doc.Transient.Retry.InitialIntervalSeconds = 3600
	h := newActionHarness(t, doc, board, "model-b")
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	ctx := context.Background()
	prefix, _ := held.NamespacePrefix("default")
	if list, _ := board.Held(ctx, prefix, h.v.Now()); len(list) != 0 {
		t.Fatalf("published before %s: %+v", held.PublishAfter, list)
	}
	h.v.Advance(held.PublishAfter)
	list, err := board.Held(ctx, prefix, h.v.Now())
	if err != nil || len(list) != 1 {
		t.Fatalf("held list %+v, %v; want the prompt", list, err)
	}
	e := list[0].Entry
	if e.SessionID != "s1" || e.RequestID != "2" || e.State != "retry_wait" || e.Code != "provider_overloaded" || e.Agent != "claude-agent-acp" ||
		e.Next == nil || !e.Next.Equal(epoch.Add(time.Hour)) || strings.Join(e.Offered, ",") != "retry_now,skip,stop" {
		t.Fatalf("entry %+v", e)
	}
	if _, err := board.Ask(ctx, list[0].ID, held.Request{ID: "r1", Action: held.ActionSkip, By: "operator"}, h.v.Now()); err != nil {
		t.Fatal(err)
	}
	h.clientFrames()
	h.v.Advance(held.RefreshEvery)
	sent := h.agentFrames()
	if len(sent) != 1 || !strings.Contains(sent[0], `"session/set_model"`) {
		t.Fatalf("want the switch the operator asked for, got %q", sent)
	}
	if n := h.clientFrames(); len(n) == 0 || !strings.Contains(n[0], `"by":"operator"`) {
		t.Errorf("want the action's notice first, got %q", n)
	}
	if last := h.log[len(h.log)-1]; last.By != guard.ByOperator || last.Decision.Reason != guard.ReasonSkipNow {
		t.Errorf("attempt record %+v, want skip_now by operator", last)
	}
	got, _, _ := st.Get(ctx, list[0].ID)
	if got == nil || got.Result == nil || got.Result.ID != "r1" || got.Result.State != "switching" || got.Result.Error != "" || got.Request != nil || got.Held(h.v.Now()) {
		t.Errorf("entry after the action: %+v (result %+v)", got, got.Result)
	}
}
