package guard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/policy"
)

// Seed 004 through the guard (no circuits, reset waiting off): a provider
// hint of 3 s is the floor of a 1 s retry; auth failures are never
// retried whatever the policy says; a bare 409 is a request the agent
// must change.
func TestSeed004ThroughTheGuard(t *testing.T) {
	retryOnly := mustPolicy(t, `{"transient":{"retry":{"max_retries":3,"initial_interval_seconds":1},"on_exhausted":"stop"},
	 "hard":{"retry":{"max_retries":3,"initial_interval_seconds":1},"on_exhausted":"stop"}}`)

	t.Run("a 3 s hint is never retried after 1 s", func(t *testing.T) {
		h, _ := textHarness(t, "codex-acp", retryOnly)
		h.start()
		h.agent(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":{"message":"Rate limit reached for gpt-5 in organization org-x on tokens per min (TPM): Limit 30000, Used 30000, Requested 1200. Please try again in 3s."}}}`)
		notice := h.clientFrames()
		if len(notice) != 1 || !strings.Contains(notice[0], `"delayMs":3000`) {
			t.Fatalf("client got %q, want one retry notice for 3000 ms", notice)
		}
		h.v.Advance(time.Second)
		if got := h.agentFrames(); len(got) != 0 {
			t.Fatalf("retried after 1 s: %q", got)
		}
		h.v.Advance(2 * time.Second)
		if got := h.agentFrames(); len(got) != 1 || !strings.Contains(got[0], `"session/prompt"`) {
			t.Fatalf("after 3 s the agent got %q, want the retried prompt", got)
		}
	})
	t.Run("auth is never retried", func(t *testing.T) {
		h, _ := textHarness(t, "codex-acp", retryOnly)
		h.start()
		h.agent(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":{"message":"unexpected status 401 Unauthorized: Incorrect API key provided: sk-test-****fake."}}}`)
		got := h.clientFrames()
		_, _, pe, _ := providerError(t, got[len(got)-1])
		if pe["code"] != "auth_required" || pe["recovery"].(map[string]any)["reason"] != policy.ReasonNotRetryable {
			t.Errorf("providerError %v: want auth_required, not_retryable", pe)
		}
		h.v.Advance(time.Hour)
		if got := h.agentFrames(); len(got) != 0 {
			t.Errorf("an auth failure was retried: %q", got)
		}
	})
	t.Run("a bare 409 is not retried", func(t *testing.T) {
		h, _ := textHarness(t, "codex-acp", retryOnly)
		h.start()
		h.agent(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":{"message":"unexpected status 409 Conflict: , url: http://127.0.0.1:8787/v1/responses"}}}`)
		got := h.clientFrames()
		_, _, pe, _ := providerError(t, got[len(got)-1])
		if pe["class"] != "request" || pe["recovery"].(map[string]any)["reason"] != policy.ReasonRequestClass {
			t.Errorf("providerError %v: want a request-class stop", pe)
		}
	})
}
