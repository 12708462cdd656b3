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
		t.Frame(transport.A2C, benchFrame, transport.ViaPeer, false)
	}
}
