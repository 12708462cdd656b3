package guard_test

import (
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/policy"
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
