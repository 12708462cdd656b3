package pipeline

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
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
		t.Frame(transport.A2C, benchFrame, transport.ViaPeer, false)
	}
}

// TestRecorderTapWritesTheEventStamp: what the tap writes carries the
// time of the event it belongs to (the stamp the guard decided with), not
// the clock when the tap happens to run; before the loop's first stamp it
// reads the clock; t_ms never goes back.
func TestRecorderTapWritesTheEventStamp(t *testing.T) {
	var buf bytes.Buffer
	start := time.Now()
	tap := &recorderTap{rec: replay.NewRecorder(&buf, replay.RecorderOptions{}), start: start, name: &recordName{}}
	var _ transport.StampTap = tap

	tap.Frame(transport.C2A, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n"), transport.ViaPeer, false)
	readBy := time.Since(start).Milliseconds() // the clock the tap read was no later than this
	// Stamps far from the wall clock: a tap that read its own clock would
	// write about 0 for each.
	tap.Stamp(start.Add(5 * time.Second))
	tap.Frame(transport.A2C, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n"), transport.ViaPeer, false)
	tap.Stderr("agent: failed")
	tap.attemptLogged(1, nil)
	tap.Stamp(start.Add(3 * time.Second)) // never goes back
	tap.Stopping()
	tap.Stamp(start.Add(7250 * time.Millisecond))
	tap.Exit(transport.ExitStatus{Code: 0})

	var got []int64
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var ev struct {
			TMs int64 `json:"t_ms"`
		}
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		got = append(got, ev.TMs)
	}
	if len(got) != 6 {
		t.Fatalf("got %d events %v, want 6", len(got), got)
	}
	if got[0] < 0 || got[0] > readBy {
		t.Errorf("before any stamp: t_ms %d, want the clock's (0 to %d)", got[0], readBy)
	}
	if want := []int64{5000, 5000, 5000, 5000, 7250}; !slices.Equal(got[1:], want) {
		t.Errorf("t_ms %v, want %v after the first", got[1:], want)
	}
}
