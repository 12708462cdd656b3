package testbin

import (
	"io"
	"testing"
)

func TestStreamWaits(t *testing.T) {
	r, w := io.Pipe()
	s := NewStream()
	go s.Fill(r)
	go func() {
		io.WriteString(w, "agent started pid=42\n")
		io.WriteString(w, "bye\n")
		w.Close()
	}()
	if !s.WaitFor("pid=42") {
		t.Fatal("WaitFor missed text that was written")
	}
	s.WaitEOF()
	if s.WaitFor("never written") {
		t.Error("WaitFor reported text that never came")
	}
	if got := s.Tail(4); got != "…bye\n" {
		t.Errorf("Tail = %q", got)
	}
}
