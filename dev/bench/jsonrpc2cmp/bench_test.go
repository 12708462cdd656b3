package jsonrpc2cmp

import (
	"io"
	"testing"
)

// BenchmarkRelay relays b.N agent notifications of each size to the
// client, end to end over pipes, and reports the time per frame. One run
// interleaves both relays per size so that a busy machine weighs on both
// alike.
func BenchmarkRelay(b *testing.B) {
	for _, size := range []struct {
		name string
		text int
	}{{"200B", 100}, {"16KiB", 16 << 10}, {"1MiB", 1 << 20}} {
		frame := notification(size.text)
		for _, side := range []struct {
			name  string
			start func(testing.TB) *relay
		}{{"acp-guard", startGuard}, {"jsonrpc2", startJSONRPC2}} {
			b.Run(size.name+"/"+side.name, func(b *testing.B) {
				r := side.start(b)
				b.SetBytes(int64(len(frame)))
				b.ReportAllocs()
				b.ResetTimer()
				// The writer: ends after b.N frames.
				go func() {
					for i := 0; i < b.N; i++ {
						if _, err := io.WriteString(r.agent, frame); err != nil {
							return
						}
					}
				}()
				for i := 0; i < b.N; i++ {
					if err := skipLine(r.client); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				r.stop()
			})
		}
	}
}
