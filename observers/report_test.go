package observers

import (
	"strings"
	"testing"
	"time"
)

// A turn's whole visible text is kept while it may be one error line, and
// is not output until the guard decides; anything that cannot be part of
// one error line closes it, and then all of it is output. Retry notes are
// diagnostics for every adapter and stay out of the text.
func TestErrorLineCandidate(t *testing.T) {
	const s = "sess-1"
	msg := func(text string) []byte { return chunk(s, "agent_message_chunk", text) }
	for _, tt := range []struct {
		name     string
		adapter  string
		steps    [][]byte
		wantText string // "" : no candidate
		output   bool   // AssistantOutput before the guard decides
		notes    int
	}{
		{"one chunk", "some-new-agent", [][]byte{msg("Error: 429 Too Many Requests")}, "Error: 429 Too Many Requests", false, 0},
		{"streamed across chunks", "some-new-agent", [][]byte{msg("Err"), msg("or: 503 "), msg("Service Unavailable")}, "Error: 503 Service Unavailable", false, 0},
		{"a long body in a chunk of its own", "some-new-agent", [][]byte{msg("Error: 500\n"), msg("{\"error\": {\"message\": \"" + strings.Repeat("x", 1500) + "\"}}")}, "Error: 500\n{\"error\": {\"message\": \"" + strings.Repeat("x", 1500) + "\"}}", false, 0},
		{"indented continuation", AdapterClaude, [][]byte{msg("API Error: 401 invalid x-api-key\n"), msg("  Fix your key")}, "API Error: 401 invalid x-api-key\n  Fix your key", false, 0},
		{"notes before the line stay out of it", AdapterQwen, [][]byte{msg("Retrying (attempt 1/2, waiting 2s)..."), msg("Retrying (attempt 2/2, waiting 4s)..."), msg("[API Error: Connection error.]")}, "[API Error: Connection error.]", false, 2},
		{"notes only", AdapterClaude, [][]byte{msg("API Error (Connection error.) · Retrying in 1 seconds… (attempt 1/10)")}, "", false, 1},
		{"an answer closes it at its first words", AdapterCodex, [][]byte{msg("Sure"), msg(", here is the fix.")}, "", true, 0},
		{"text before the error line", "some-new-agent", [][]byte{msg("Hello from the provider."), msg("Error: 500 boom")}, "", true, 0},
		{"a new paragraph of prose closes it", "some-new-agent", [][]byte{msg("Error: 404 is what the API returns.\n"), msg("So I changed the URL.")}, "", true, 0},
		{"a code fence closes it", "some-new-agent", [][]byte{msg("Error: 404\n"), msg("```go\nx := 1\n```")}, "", true, 0},
		{"too long", "some-new-agent", [][]byte{msg("Error: 500 " + strings.Repeat("x", 5000))}, "", true, 0},
		{"an image is output", "some-new-agent", [][]byte{msg("Error: 500"), contentChunk(s, map[string]any{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="})}, "", true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(tt.adapter, bound(t))
			turn := tr.Start(s, time.Time{})
			for _, p := range tt.steps {
				if observe(t, tr, p) {
					t.Fatalf("suppressed %s", p)
				}
			}
			text, ok := turn.ErrorLineText()
			if ok != (tt.wantText != "") || text != tt.wantText {
				t.Errorf("ErrorLineText = %q, %v; want %q", text, ok, tt.wantText)
			}
			if turn.Evidence.AssistantOutput != tt.output || turn.Evidence.Diagnostics != tt.notes {
				t.Errorf("output %v notes %d, want %v %d", turn.Evidence.AssistantOutput, turn.Evidence.Diagnostics, tt.output, tt.notes)
			}
			if tt.wantText != "" {
				turn.SettleErrorLine(true)
				if turn.Evidence.AssistantOutput || !turn.ReplaySafe() {
					t.Errorf("a failure report is a diagnostic: output %v, replay-safe %v", turn.Evidence.AssistantOutput, turn.ReplaySafe())
				}
			}
		})
	}
	// The guard's "no": the text was output.
	tr := NewTracker("x", bound(t))
	turn := tr.Start(s, time.Time{})
	observe(t, tr, msg("Error: I could not find the file you mentioned."))
	turn.SettleErrorLine(false)
	if !turn.Evidence.AssistantOutput || turn.ReplaySafe() {
		t.Errorf("prose settled as output: output %v, replay-safe %v", turn.Evidence.AssistantOutput, turn.ReplaySafe())
	}
}

// Thoughts and tool calls make a turn unsafe to replay but do not close
// its error line.
func TestErrorLineWithThoughtsAndTools(t *testing.T) {
	const s = "sess-1"
	tr := NewTracker("some-new-agent", bound(t))
	turn := tr.Start(s, time.Time{})
	observe(t, tr, chunk(s, "agent_thought_chunk", "calling the API"))
	observe(t, tr, toolCall(s, "tool_call"))
	observe(t, tr, chunk(s, "agent_message_chunk", "Error: 529 Overloaded"))
	if text, ok := turn.ErrorLineText(); !ok || text != "Error: 529 Overloaded" {
		t.Errorf("ErrorLineText = %q, %v", text, ok)
	}
	if turn.ReplaySafe() {
		t.Errorf("replay-safe after a thought and a tool call")
	}
}

// Cursor's rule is exclusive: text with its prefix that the rule refuses
// is vetoed from the generic projection; other text is not.
func TestExclusiveSignatureVetoes(t *testing.T) {
	sig := bound(t)[0]
	for _, tt := range []struct {
		adapter, text string
		want          bool
	}{
		{AdapterCursor, "Error: RetriableError: context canceled", true},
		{AdapterCursor, "Error: RetriableError: [unavailable] PING timed out", false}, // the rule takes it
		{AdapterCursor, "Error: 503 Service Unavailable", false},
		{AdapterCodex, "Error: RetriableError: context canceled", false},
	} {
		if got := sig.Vetoes(tt.adapter, tt.text); got != tt.want {
			t.Errorf("Vetoes(%s, %q) = %v, want %v", tt.adapter, tt.text, got, tt.want)
		}
	}
	if bound(t)[1].Vetoes(AdapterCopilot, "Error: 400 This model's maximum context length is 128000 tokens.") {
		t.Errorf("Copilot's signature is not exclusive")
	}
}

// Text for a session after its prompt returned is late output: counted on
// the answered turn, never on the next one.
func TestLateOutput(t *testing.T) {
	const s = "sess-1"
	tr := NewTracker(AdapterKilo, bound(t))
	turn := tr.Start(s, time.Time{})
	tr.Return(turn, "end_turn")
	observe(t, tr, chunk(s, "agent_message_chunk", "Hello! How can "))
	observe(t, tr, chunk(s, "agent_message_chunk", " \n")) // blank: not counted
	observe(t, tr, chunk(s, "agent_thought_chunk", "thinking"))
	if turn.Evidence.LateOutput != 2 {
		t.Errorf("late output %d, want 2", turn.Evidence.LateOutput)
	}
	next := tr.Start(s, time.Time{})
	observe(t, tr, chunk(s, "agent_message_chunk", "answer"))
	if next.Evidence.LateOutput != 0 || turn.Evidence.LateOutput != 2 {
		t.Errorf("after the next prompt: late %d on the old turn, %d on the new", turn.Evidence.LateOutput, next.Evidence.LateOutput)
	}
}

// The agent's own visible retries: notes in text or on stderr, restated
// openings, and what it states in its error — the most of them.
func TestAgentRetries(t *testing.T) {
	const s = "sess-1"
	tr := NewTracker(AdapterGemini, bound(t))
	turn := tr.Start(s, time.Time{})
	for i := range 3 {
		tr.Stderr("Attempt "+string(rune('1'+i))+" failed with status 502. Retrying with backoff... _ApiError: {\"error\":{\"code\":502}}"+strings.Repeat(" ", 2000), time.Time{})
	}
	tr.Stderr("    at async retryWithBackoff (file:///x/chunk.js:1:2)", time.Time{}) // not a note
	if turn.Evidence.StderrNotes != 3 || turn.AgentRetries() != 3 {
		t.Errorf("stderr notes %d, agent retries %d; want 3 and 3", turn.Evidence.StderrNotes, turn.AgentRetries())
	}
	if turn.LastNote() != "" {
		t.Errorf("a stderr note is not an ACP diagnostic: last note %q", turn.LastNote())
	}
	turn.StatedRetries = 5
	if turn.AgentRetries() != 5 {
		t.Errorf("agent retries %d, want 5 (stated)", turn.AgentRetries())
	}
	// Notes before any output are counted; after output they are not
	// looked for (they change nothing the guard decides), and the
	// restatements of the answer count the retries.
	tr = NewTracker(AdapterCopilot, bound(t))
	turn = tr.Start(s, time.Time{})
	observe(t, tr, chunk(s, "agent_message_chunk", "Info: Request failed due to a transient API error. Retrying..."))
	for range 3 {
		observe(t, tr, chunk(s, "agent_message_chunk", "Hello from the fake provider."))
		observe(t, tr, chunk(s, "agent_message_chunk", "Info: Response was interrupted due to a server error. Retrying..."))
	}
	if turn.Evidence.Diagnostics != 1 || turn.AgentRetries() != 2 {
		t.Errorf("notes %d, agent retries %d; want 1 and 2", turn.Evidence.Diagnostics, turn.AgentRetries())
	}
}
