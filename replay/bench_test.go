package replay

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

var benchFrame = []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + strings.Repeat("lorem ipsum ", 40) + `"}}}}`)

// BenchmarkRecorderFrame measures the per-frame cost the proxy's event loop
// pays for recording (no redaction).
func BenchmarkRecorderFrame(b *testing.B) {
	rec := NewRecorder(io.Discard, RecorderOptions{})
	b.SetBytes(int64(len(benchFrame)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rec.Frame(int64(i), DirA2C, benchFrame, "", false)
	}
}

// BenchmarkReader measures reading a transcript of such frames.
func BenchmarkReader(b *testing.B) {
	var buf bytes.Buffer
	rec := NewRecorder(&buf, RecorderOptions{})
	for i := range 1000 {
		rec.Frame(int64(i), DirA2C, benchFrame, "", false)
	}
	rec.Close()
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(data))
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}
