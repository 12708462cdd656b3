package guard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// A provider hint beyond the policy's maximum wait is not waited for, and
// not lost: the final ProviderError says when the provider expects to be
// ready (retryAfterMs).
func TestHintBeyondMaximumReported(t *testing.T) {
	doc := policy.Default()
	doc.Hard = policy.ClassPolicy{WaitForReset: policy.WaitForReset{Enabled: true, MaxWaitSeconds: 300}, OnExhausted: policy.OutcomeStop}
	h := newHarness(t, "codex-acp", doc)
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":{"message":"You've hit your usage limit. Upgrade to Pro or try again in 10800s.","codex_error_info":"usage_limit_exceeded"}}}`)
	got := h.clientFrames()
	if len(got) != 1 {
		t.Fatalf("client got %q", got)
	}
	_, _, pe, _ := providerError(t, got[0])
	if pe["code"] != "quota_limited" || pe["retryAfterMs"] != float64(3*time.Hour/time.Millisecond) {
		t.Errorf("providerError %v: want quota_limited with retryAfterMs 10800000", pe)
	}
	if r := pe["recovery"].(map[string]any); r["action"] != "stop" || r["reason"] != "exhausted" {
		t.Errorf("recovery %v", r)
	}
	if sent := h.agentFrames(); len(sent) != 0 {
		t.Errorf("sent %q", sent)
	}
}

// Every persisted transition writes its record: a refused model switch
// stops with a record that names the failure's class (it had none).
func TestSwitchFailedRecorded(t *testing.T) {
	h := &harness{t: t, v: transport.NewVirtual(epoch)}
	g := guard.New(guard.Config{Identity: observers.Identity{Flag: "claude-agent-acp"}, Engine: catalogue.Default(), Policy: policy.Default(),
		Fallback: []string{"model-b"}, Attempts: h, Events: guard.Turns(func(r guard.TurnReport) { h.reports = append(h.reports, r) })})
	h.r = transport.NewRelay(transport.Config{MaxLine: 1 << 20, Hooks: g}, h.v)
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	h.agentFrames()
	h.clientFrames() // the switch notice
	h.agent(`{"jsonrpc":"2.0","id":"acp-guard:1","error":{"code":-32602,"message":"unknown model"}}`)
	got := h.clientFrames()
	if len(got) != 1 {
		t.Fatalf("client got %q", got)
	}
	_, _, pe, _ := providerError(t, got[0])
	if r := pe["recovery"].(map[string]any); r["reason"] != "switch_failed" {
		t.Errorf("recovery %v", r)
	}
	var recs []string
	for _, r := range h.log {
		recs = append(recs, string(r.Outcome)+"/"+r.Decision.Reason+"/"+r.Class)
	}
	if want := "failed/exhausted/transient stopped/switch_failed/transient"; strings.Join(recs, " ") != want {
		t.Errorf("records: got %v, want %s", recs, want)
	}
}
