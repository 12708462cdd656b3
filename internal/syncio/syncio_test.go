package syncio

import (
	"strings"
	"sync"
	"testing"
)

func TestConcurrentWritesDoNotInterleave(t *testing.T) {
	var buf Buffer
	w := NewWriter(&buf)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			line := strings.Repeat(string(rune('a'+i)), 100) + "\n"
			for range 100 {
				w.Write([]byte(line))
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("got %d lines, want 800", len(lines))
	}
	for _, l := range lines {
		if l != strings.Repeat(l[:1], 100) {
			t.Fatalf("interleaved line %q", l)
		}
	}
	if string(buf.Bytes()) != buf.String() {
		t.Error("Bytes and String disagree")
	}
}
