package observers

import (
	"strings"
	"testing"
	"time"
)

func TestRepeatedOpening(t *testing.T) {
	cases := []struct {
		name   string
		chunks []string
		times  int
	}{
		{"gemini re-stream", []string{"Hello from ", "the fake ", "Hello from ", "the fake ", "provider."}, 1},
		{"three passes", []string{"Hello from ", "the fake ", "Hello from ", "the fake ", "Hello from ", "the fake ", "provider."}, 2},
		{"re-chunked", []string{"Hello from the fake ", "Hello ", "from the ", "fake provider."}, 1},
		{"long opening, first 64 bytes restated", []string{strings.Repeat("abcdefgh", 10), strings.Repeat("abcdefgh", 8), "rest"}, 1},
		{"escapes kept together", []string{`line one\n"quoted" `, `line one\n"quoted" `}, 1},
		{"healthy", []string{"Hello! ", "How can I ", "help you today?"}, 0},
		{"short opening", []string{"Sure. ", "Sure. "}, 0},
		{"opening words reused", []string{"I will read the file now. ", "Done. ", "I will read the other file."}, 0},
		{"restatement cut short", []string{"Hello from ", "the fake ", "Hello from ", "the"}, 0},
		{"restatement mid-chunk does not count", []string{"Hello from the fake ", "so: Hello from the fake "}, 0},
		{"restart set off by a line break", []string{"Hello from ", "the fake ", "\n\nHello from ", "the fake provider."}, 1},
		{"restart set off by spaces, re-chunked", []string{"Hello from the fake ", "  Hello ", "from the fake provider."}, 1},
		{"opening words reused after a line break", []string{"I will read the file now. ", "\nI will read the other file."}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTracker(AdapterCodex, DefaultSignatures)
			turn := tr.Start("s", time.Time{})
			for _, ch := range c.chunks {
				observe(t, tr, chunk("s", "agent_message_chunk", ch))
				observe(t, tr, chunk("s", "agent_thought_chunk", ch))   // thoughts never count
				observe(t, tr, chunk("s", "agent_message_chunk", "  ")) // nor blank chunks
			}
			if got, _ := turn.Repeats(); got != c.times {
				t.Errorf("repeats = %d, want %d", got, c.times)
			}
		})
	}
}

func TestRepeatedOnlyBeforeReturn(t *testing.T) {
	tr := NewTracker(AdapterCodex, DefaultSignatures)
	turn := tr.Start("s", time.Time{})
	observe(t, tr, chunk("s", "agent_message_chunk", "Hello from the fake "))
	tr.Return(turn, "end_turn")
	observe(t, tr, chunk("s", "agent_message_chunk", "Hello from the fake "))
	if got, _ := turn.Repeats(); got != 0 {
		t.Errorf("a chunk after the prompt returned counted: %d", got)
	}
}

// BenchmarkObserveVariedChunks streams distinct chunks (a healthy answer):
// the repeat detector's usual cost.
func BenchmarkObserveVariedChunks(b *testing.B) {
	tr := NewTracker(AdapterCodex, DefaultSignatures)
	tr.Start("sess-1", time.Time{})
	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards quietly hex bold jumping zebras")
	var frames [][]byte
	for i := range 64 {
		frames = append(frames, chunk("sess-1", "agent_message_chunk", words[i%len(words)]+" "+words[(i*7)%len(words)]+" and more text of a chunk "))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tr.ObserveParams(frames[i%len(frames)])
	}
}
