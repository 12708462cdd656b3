package testbin

import (
	"bytes"
	"io"
	"sync"
)

// Stream collects what a child process writes on one of its outputs and
// lets a test wait for text in it or for its end, without sleeping.
type Stream struct {
	mu   sync.Mutex
	cond *sync.Cond
	b    bytes.Buffer
	eof  bool
}

// NewStream returns an empty Stream; feed it with Fill.
func NewStream() *Stream {
	s := &Stream{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// Fill copies r into the stream until r ends (then closes r if it is a
// Closer). Run it in its own goroutine; it exits at EOF or a read error.
func (s *Stream) Fill(r io.Reader) {
	if c, ok := r.(io.Closer); ok {
		defer c.Close()
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		s.mu.Lock()
		s.b.Write(buf[:n])
		if err != nil {
			s.eof = true
		}
		s.cond.Broadcast()
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// WaitFor waits until the stream holds text, and reports false if it ended
// without it.
func (s *Stream) WaitFor(text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !bytes.Contains(s.b.Bytes(), []byte(text)) {
		if s.eof {
			return false
		}
		s.cond.Wait()
	}
	return true
}

// WaitEOF waits until the stream has ended.
func (s *Stream) WaitEOF() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.eof {
		s.cond.Wait()
	}
}

// String returns what was collected so far.
func (s *Stream) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Tail returns at most the last n bytes collected, marked when cut.
func (s *Stream) Tail(n int) string {
	str := s.String()
	if len(str) > n {
		return "…" + str[len(str)-n:]
	}
	return str
}
