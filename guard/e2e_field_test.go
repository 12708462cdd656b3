package guard_test

import (
	"bytes"
	"testing"
)

// The Cursor veto is the catalogue's: chunks it vetoes reach the client as
// the agent wrote them and end_turn passes (issue 12: the observer used to
// rewrite "[deadline_exceeded]" and let "retry limit reached" through to a
// classifier that vetoed it).
func TestE2ECursorVetoIsTheCatalogues(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"Error: RetriableError: [deadline_exceeded] stream timed out",
		"Error: RetriableError: retry limit reached",
		"Error: RetriableError: context_canceled",
	} {
		t.Run(text, func(t *testing.T) {
			t.Parallel()
			args := []string{"--scenario", "cursor-retriable", "--text", text}
			want := directTurn(t, args...)
			got := turnBytes(promptTurn(t, startProxy(t, nil, args...)))
			if !bytes.Equal(got, want) {
				t.Errorf("through acp-guard:\n%s\nwant the agent's bytes:\n%s", got, want)
			}
		})
	}
}

// A non-text chunk after the control chunk is output: the marker clears,
// the turn's end_turn passes, only the control chunk is suppressed.
func TestE2ECursorImageChunkIsOutput(t *testing.T) {
	t.Parallel()
	args := []string{"--scenario", "cursor-then-image"}
	direct := directTurn(t, args...)
	var want []byte
	for _, ln := range bytes.SplitAfter(direct, []byte("\n")) {
		if !bytes.Contains(ln, []byte("RetriableError")) {
			want = append(want, ln...)
		}
	}
	if !bytes.Contains(want, []byte(`"type":"image"`)) || !bytes.Contains(want, []byte(`"end_turn"`)) {
		t.Fatalf("the demo agent's turn lacks the image chunk or end_turn:\n%s", direct)
	}
	got := turnBytes(promptTurn(t, startProxy(t, nil, args...)))
	if !bytes.Equal(got, want) {
		t.Errorf("through acp-guard:\n%s\nwant:\n%s", got, want)
	}
}

// A chunk of non-ASCII whitespace is neither output nor a clearing event:
// the control chunk still turns end_turn into the ProviderError.
func TestE2ECursorUnicodeBlankDoesNotClear(t *testing.T) {
	t.Parallel()
	frames := promptTurn(t, startProxy(t, nil, "--scenario", "cursor-then-blank"))
	pe := checkCursorRewrite(t, frames)
	if pe.Evidence.AssistantOutput {
		t.Errorf("evidence.assistantOutput: got true for a whitespace-only chunk")
	}
	if !pe.ReplaySafe {
		t.Errorf("replaySafe: got false, want true (a blank chunk is not output)")
	}
}
