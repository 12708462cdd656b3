package acpguard

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/replay"
	"github.com/acp-guard/acp-guard/transport"
)

var benchFrame = []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + strings.Repeat("lorem ipsum ", 40) + `"}}}}` + "\n")

// BenchmarkRecorderTapFrame measures what recording costs the event loop
// per frame through the pipeline's tap (stamp and write under the tap's
// lock), to compare with replay's BenchmarkRecorderFrame (the write alone).
func BenchmarkRecorderTapFrame(b *testing.B) {
	t := &recorderTap{rec: replay.NewRecorder(io.Discard, replay.RecorderOptions{}), start: time.Now(), name: &recordName{}}
	b.SetBytes(int64(len(benchFrame)))
	b.ReportAllocs()
	for b.Loop() {
		t.Frame(time.Now(), transport.A2C, benchFrame, transport.ViaPeer, false)
	}
}

// A frame is recorded at the time of its event (what the guard's timers
// read), not when the tap is told, which comes after the guard's work on
// it; and no t_ms goes below the one before it, whatever the stamps.
func TestRecorderTapStampsTheEvent(t *testing.T) {
	var out strings.Builder
	rec := replay.NewRecorder(&out, replay.RecorderOptions{})
	start := time.Now().Add(-time.Hour) // the tap is told an hour late
	tap := &recorderTap{rec: rec, start: start, name: &recordName{}}
	frame := []byte(`{"jsonrpc":"2.0","method":"x","params":{}}` + "\n")
	tap.Frame(start.Add(5*time.Millisecond), transport.A2C, frame, transport.ViaPeer, false)
	tap.Frame(start.Add(1005*time.Millisecond), transport.C2A, frame, transport.ViaGuard, false)
	tap.Frame(start.Add(900*time.Millisecond), transport.A2C, frame, transport.ViaPeer, false) // an earlier stamp
	tap.Stderr("now")                                                                          // written an hour in
	tap.Frame(start.Add(2000*time.Millisecond), transport.A2C, frame, transport.ViaPeer, false)
	rec.Flush()
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		ms, _, _ := strings.Cut(strings.TrimPrefix(l, `{"t_ms":`), ",")
		got = append(got, ms)
	}
	if want := []string{"5", "1005", "1005"}; len(got) != 5 || strings.Join(got[:3], " ") != strings.Join(want, " ") || got[3] != got[4] || len(got[3]) < 7 {
		t.Errorf("t_ms %v: want 5, 1005, 1005 (never back), then an hour in twice", got)
	}
}
