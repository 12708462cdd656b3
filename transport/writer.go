package transport

import (
	"io"
	"log/slog"
	"time"
)

// writer owns one output stream: only its goroutine writes to it. Batches
// arrive through a bounded queue, which gives backpressure: a reader that
// stops reading eventually stalls the relay instead of growing memory.
type writer struct {
	w      io.Writer
	name   string
	log    *slog.Logger
	queue  chan [][]byte
	done   chan struct{}
	closed bool
	onFail func() // called once, from the writer goroutine, when a write fails
}

func newWriter(w io.Writer, log *slog.Logger, name string) *writer {
	return &writer{w: w, name: name, log: log, queue: make(chan [][]byte, 32), done: make(chan struct{})}
}

func (w *writer) enqueue(b [][]byte) {
	if w.closed {
		return
	}
	w.queue <- b
}

// close ends the queue; after the queued data is written the underlying
// writer is closed if it is an io.Closer (the agent's stdin).
func (w *writer) close() {
	if w.closed {
		return
	}
	w.closed = true
	close(w.queue)
}

// wait waits until the queue is written, at most d.
func (w *writer) wait(d time.Duration) {
	select {
	case <-w.done:
	case <-time.After(d):
		w.log.Warn("output not drained in time", "to", w.name)
	}
}

func (w *writer) run() {
	defer close(w.done)
	failed := false
	for batch := range w.queue {
		if failed {
			continue
		}
		for _, b := range batch {
			if _, err := w.w.Write(b); err != nil {
				w.log.Warn("write failed; discarding further output", "to", w.name, "err", err)
				failed = true
				if w.onFail != nil {
					go w.onFail()
				}
				break
			}
		}
	}
	if c, ok := w.w.(io.Closer); ok && w.name == "agent" {
		c.Close()
	}
}
