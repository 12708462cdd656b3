package demoagent

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
)

const benchInput = `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}
{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[{"type":"text","text":"go"}]}}
`

// countingWriter counts the bytes the agent writes.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// BenchmarkStream measures one whole stream turn (a fresh Run per
// iteration: session/new, the prompt, EOF), in bytes written per second.
func BenchmarkStream(b *testing.B) {
	for _, bb := range []struct {
		name        string
		count, size int
	}{
		{"20000x64B", 20000, 64},
		{"200x64KiB", 200, 64 << 10},
	} {
		b.Run(bb.name, func(b *testing.B) {
			opts := Options{Scenario: "stream", Count: bb.count, Size: bb.size}
			var w countingWriter
			if err := Run(context.Background(), opts, strings.NewReader(benchInput), &w, io.Discard); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(w.n)
			b.ReportAllocs()
			for b.Loop() {
				if err := Run(context.Background(), opts, strings.NewReader(benchInput), io.Discard, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEmptyTurn measures a prompt round trip through Run for the
// "empty" scenario: 1000 prompts per Run.
func BenchmarkEmptyTurn(b *testing.B) {
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}` + "\n")
	for i := range 1000 {
		in.WriteString(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+2) + `,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[]}}` + "\n")
	}
	input := in.String()
	b.ReportAllocs()
	for b.Loop() {
		if err := Run(context.Background(), Options{Scenario: "empty"}, strings.NewReader(input), io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
