// Package syncio has the two small concurrency-safe I/O helpers the
// project needs in several places: a writer whose writes never interleave,
// and a buffer that one goroutine writes while another reads.
package syncio

import (
	"bytes"
	"io"
	"sync"
)

// Writer serializes writes to W, so lines written by several goroutines
// never interleave.
type Writer struct {
	mu sync.Mutex
	W  io.Writer
}

// NewWriter returns a Writer around w.
func NewWriter(w io.Writer) *Writer { return &Writer{W: w} }

func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}

// Buffer is a bytes.Buffer safe for concurrent writers and readers.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns the contents so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Bytes returns a copy of the contents so far.
func (s *Buffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b.Bytes()...)
}
