package guard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/policy"
)

// Hints follow the SDKs: a 3 s hint with a 1 s/2-retry policy (last
// backoff 2 s) and waits off is retried once after 3 s, not stopped
// (hint_beyond_policy); the attempt log and the notice say the provider's
// hint was honoured (retry_hint_honoured). The clock is the relay's
// virtual one.
func TestHintHonouredBeyondTheLastBackoff(t *testing.T) {
	doc := mustPolicy(t, `{"transient":{"retry":{"max_retries":2,"initial_interval_seconds":1},"on_exhausted":"stop"}}`)
	h, _ := textHarness(t, "codex-acp", doc)
	h.start()
	start := h.v.Now()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":{"message":"Rate limit reached for gpt-5 in organization org-x on tokens per min (TPM): Limit 30000, Used 30000, Requested 1200. Please try again in 3s."}}}`)
	notice := h.clientFrames()
	if len(notice) != 1 || !strings.Contains(notice[0], `"delayMs":3000`) || !strings.Contains(notice[0], `"reason":"retry_hint_honoured"`) ||
		!strings.Contains(notice[0], "as the provider asked") {
		t.Fatalf("client got %q, want one retry notice for 3000 ms naming retry_hint_honoured", notice)
	}
	h.v.Advance(2999 * time.Millisecond)
	if got := h.agentFrames(); len(got) != 0 {
		t.Fatalf("retried before 3 s: %q", got)
	}
	h.v.Advance(time.Millisecond)
	got := h.agentFrames()
	if len(got) != 1 || !strings.Contains(got[0], `"session/prompt"`) {
		t.Fatalf("after 3 s the agent got %q, want the retried prompt", got)
	}
	if d := h.v.Now().Sub(start); d < 3*time.Second {
		t.Errorf("retried after %v, want ≥ 3 s", d)
	}
	var recs []string
	for _, r := range h.log {
		recs = append(recs, string(r.Outcome)+"/"+r.Decision.Reason)
	}
	if len(recs) == 0 || recs[0] != "scheduled/"+policy.ReasonRetryHintHonoured {
		t.Errorf("attempt records %v: want the first scheduled with %s", recs, policy.ReasonRetryHintHonoured)
	}
}
