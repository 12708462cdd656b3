package guard_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// discard is an Output that drops frames, so the benchmark measures only
// the relay goroutine's work.
type discard struct{ n int }

func (d *discard) Now() time.Time       { return epoch }
func (d *discard) WriteClient(b []byte) { d.n += len(b) }
func (d *discard) WriteAgent(b []byte)  { d.n += len(b) }
func (d *discard) Schedule(time.Duration, func()) func() bool {
	return func() bool { return false }
}

// benchChunks runs the streamed-chunk loop of the relay benchmarks: a
// relay with the guard of cfg (identity codex-acp and the default
// catalogue unless cfg says), one prompt in flight, and the same small
// text chunk from the agent each iteration.
func benchChunks(b *testing.B, cfg guard.Config) {
	if cfg.Identity == (observers.Identity{}) {
		cfg.Identity = observers.Identity{Flag: "codex-acp"}
	}
	if cfg.Engine == nil {
		cfg.Engine = catalogue.Default()
	}
	r := transport.NewRelay(transport.Config{MaxLine: 1 << 20, Hooks: guard.New(cfg)}, &discard{})
	r.FromClient(transport.Line{Bytes: []byte(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}` + "\n")})
	line := []byte(msgChunk("Some ordinary text of a streamed answer, about sixty bytes.") + "\n")
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		r.FromAgent(transport.Line{Bytes: line})
	}
}

// BenchmarkRelayChunk measures the per-frame cost of the guard pipeline on
// the relay goroutine (parse, observe, forward) for a small text chunk in
// the layout agents write — the work that is not I/O.
func BenchmarkRelayChunk(b *testing.B) {
	for _, adapter := range []string{"cursor-acp", "codex-acp"} {
		b.Run(adapter, func(b *testing.B) {
			benchChunks(b, guard.Config{Identity: observers.Identity{Flag: adapter}, Policy: policy.Default()})
		})
	}
}

// BenchmarkPassThroughChunk is BenchmarkRelayChunk with the fast path's
// question asked first (Guard.PassThrough on the parsed frame): what the
// agent's reader adds per frame when it writes a chunk before the guard
// observes it (the loop's own part, the lane and the pending list, is per
// batch).
func BenchmarkPassThroughChunk(b *testing.B) {
	g := guard.New(guard.Config{Identity: observers.Identity{Flag: "codex-acp"}, Engine: catalogue.Default(), Policy: policy.Default()})
	r := transport.NewRelay(transport.Config{MaxLine: 1 << 20, Hooks: g}, &discard{})
	r.FromClient(transport.Line{Bytes: []byte(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}` + "\n")})
	line := []byte(msgChunk("Some ordinary text of a streamed answer, about sixty bytes.") + "\n")
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		m := transport.ParseMsg(line)
		if !g.PassThrough(&m) {
			b.Fatal("an ordinary chunk was refused the fast path")
		}
		r.FromAgent(transport.Line{Bytes: line})
	}
}

// BenchmarkRelayChunkCompaction is BenchmarkRelayChunk with
// request.compact_then_retry on: every update is also searched for an
// available_commands_update (compact.go).
func BenchmarkRelayChunkCompaction(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			pol := policy.Default()
			pol.Request.CompactThenRetry = on
			benchChunks(b, guard.Config{Policy: pol})
		})
	}
}

// BenchmarkRelayChunkEvents is BenchmarkRelayChunk with subscribers of the
// event stream: none; one that takes every event but frames (what
// telemetry and an info-level log take: nothing per frame); and one that
// takes frames too (a debug log: one FrameObserved per frame).
func BenchmarkRelayChunkEvents(b *testing.B) {
	for _, tt := range []struct {
		name           string
		events, frames bool
	}{{"none", false, false}, {"decisions", true, false}, {"frames", true, true}} {
		b.Run(tt.name, func(b *testing.B) {
			cfg := guard.Config{Policy: policy.Default(), Frames: tt.frames}
			n := 0
			if tt.events {
				cfg.Events = func(guard.Event) { n++ }
			}
			benchChunks(b, cfg)
		})
	}
}

// BenchmarkEmptyTurn measures, on the relay goroutine, one prompt turn the
// agent answers at once with an empty end_turn (the `roundtrip` workload
// of bench/): the request, the result, the silent check that flags it
// empty and the annotation it gains; and, for comparison, a turn with one
// chunk of output, which is not flagged.
func BenchmarkEmptyTurn(b *testing.B) {
	for _, output := range []bool{false, true} {
		name := "empty"
		if output {
			name = "with-output"
		}
		b.Run(name, func(b *testing.B) {
			out := &discard{}
			g := guard.New(guard.Config{Identity: observers.Identity{Flag: "codex-acp"}, Engine: catalogue.Default(), Policy: policy.Default()})
			r := transport.NewRelay(transport.Config{MaxLine: 1 << 20, Hooks: g}, out)
			chunk := []byte(msgChunk("hi") + "\n")
			var req, res []byte
			b.ReportAllocs()
			id := 2
			for b.Loop() {
				id++
				req = fmt.Appendf(req[:0], `{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`+"\n", id)
				res = fmt.Appendf(res[:0], `{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn"}}`+"\n", id)
				r.FromClient(transport.Line{Bytes: req})
				if output {
					r.FromAgent(transport.Line{Bytes: chunk})
				}
				r.FromAgent(transport.Line{Bytes: res})
			}
		})
	}
}
