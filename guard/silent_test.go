package guard_test

import (
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/policy"
)

// A cancelled turn that still ends end_turn with nothing is empty (the
// agent never said why), and it is never turned into a failure.
func TestCancelledEmptyTurnFlaggedNotRewritten(t *testing.T) {
	doc := policy.Default()
	doc.EmptyTurn = policy.EmptyTurnError
	h := newHarness(t, "codex-acp", doc)
	h.start()
	h.client(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)
	h.agentFrames()
	h.agent(`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`)
	got := h.clientFrames()
	want := `{"jsonrpc":"2.0","id":2,"result":{"_meta":{"acpGuard":{"silent":{"kind":"empty","evidence":{"empty":{"stopReason":"end_turn","cancelled":true}}}}},"stopReason":"end_turn"}}`
	if len(got) != 1 || strings.TrimSpace(got[0]) != want {
		t.Errorf("client got %q, want %s", got, want)
	}
}

// An existing _meta keeps its members; acpGuard is added as its first.
func TestSilentMetaKeepsAgentMeta(t *testing.T) {
	h := newHarness(t, "gemini-cli", policy.Default())
	h.start()
	h.agent("%s", msgChunk("partial "))
	h.agent(`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":0,"output_tokens":0}}}}}`)
	got := h.clientFrames()
	want := `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn","_meta":{"acpGuard":{"silent":{"kind":"truncated","evidence":{"truncated":{"outputTokens":0,"source":"_meta.quota"}}}},"quota":{"token_count":{"input_tokens":0,"output_tokens":0}}}}}`
	if len(got) != 2 || strings.TrimSpace(got[1]) != want {
		t.Errorf("client got %q, want %s", got, want)
	}
}

// Output tokens reported as non-zero, or not at all, are no evidence.
func TestTruncatedNeedsZeroUsage(t *testing.T) {
	for _, res := range []string{
		`{"stopReason":"end_turn","usage":{"inputTokens":3,"outputTokens":7,"totalTokens":10}}`,
		`{"stopReason":"end_turn"}`,
		`{"stopReason":"end_turn","usage":{"outputTokens":"0"}}`,
	} {
		h := newHarness(t, "claude-agent-acp", policy.Default())
		h.start()
		h.agent("%s", msgChunk("an answer"))
		line := `{"jsonrpc":"2.0","id":2,"result":` + res + `}`
		h.agent("%s", line)
		if got := h.clientFrames(); len(got) != 2 || strings.TrimSpace(got[1]) != line {
			t.Errorf("%s: client got %q, want it untouched", res, got)
		}
	}
}
