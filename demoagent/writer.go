package demoagent

import (
	"bufio"
	"io"
	"sync"
)

// frameWriter is the single owner of the agent's stdout. Every frame goes
// through write, under one mutex, so frames never interleave.
type frameWriter struct {
	mu         sync.Mutex
	bw         *bufio.Writer
	err        error     // first write error; later writes are dropped
	underlying io.Writer // for handing the file itself to a grandchild
}

func newFrameWriter(w io.Writer) *frameWriter {
	return &frameWriter{bw: bufio.NewWriterSize(w, 64<<10), underlying: w}
}

// write writes one frame (which must end in '\n') and, when flush is set,
// flushes it. Batching writers (the stream scenario) pass flush=false and
// call flush at the end of the batch; bufio flushes by itself when full.
func (w *frameWriter) write(frame []byte, flush bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if _, err := w.bw.Write(frame); err != nil {
		w.err = err
		return err
	}
	if flush {
		w.err = w.bw.Flush()
	}
	return w.err
}

func (w *frameWriter) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.err = w.bw.Flush()
	return w.err
}
