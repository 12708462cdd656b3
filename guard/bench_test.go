package guard_test

import (
	"testing"

	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// BenchmarkRelayChunk measures the per-frame cost of the guard pipeline on
// the relay goroutine (parse, observe, forward) for a small text chunk —
// the work that is not I/O.
func BenchmarkRelayChunk(b *testing.B) {
	for _, adapter := range []string{"cursor-acp", "codex-acp"} {
		b.Run(adapter, func(b *testing.B) {
			h := newHarness(&testing.T{}, adapter, policy.Default())
			h.start()
			line := []byte(msgChunk("Some ordinary text of a streamed answer, about sixty bytes.") + "\n")
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				h.r.FromAgent(transport.Line{Bytes: line})
				h.v.Client = h.v.Client[:0]
			}
		})
	}
}
