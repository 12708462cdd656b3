package transport

import (
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
)

// writer owns one output stream. The event loop queues what to write
// while it holds its lock; then, with the lock released, the goroutine that
// handled the event writes the queue out itself (drain). Writing outside
// the loop's lock means a peer that is slow to read its input never stops
// the other direction from flowing (an agent blocked on its stdout because
// we are blocked on its stdin would deadlock otherwise), and writing from
// the handling goroutine keeps a frame's path free of scheduler hops.
// Order holds: the queue is filled in handling order under the loop's
// lock and emptied front to back by one drainer at a time.
type writer struct {
	w    io.Writer
	name string
	log  *slog.Logger

	qmu        sync.Mutex // guards the fields up to failed
	queue      []item
	closeAsked bool
	closed     bool
	draining   bool // a goroutine is writing the queue out

	failed atomic.Bool
}

func newWriter(w io.Writer, log *slog.Logger, name string) *writer {
	return &writer{w: w, name: name, log: log}
}

// item is one flush of the loop: chunks to write, then a batch whose
// buffer they alias, to release once written.
type item struct {
	chunks  [][]byte
	release *batch
}

// enqueue queues an item; it never blocks on I/O.
func (w *writer) enqueue(it item) {
	w.qmu.Lock()
	if w.closeAsked {
		w.qmu.Unlock()
		it.release.release()
		return
	}
	w.queue = append(w.queue, it)
	w.qmu.Unlock()
}

// close asks for the stream to be closed once everything queued before it
// is written (the agent's stdin; the client's stdout is not ours to
// close).
func (w *writer) close() {
	w.qmu.Lock()
	w.closeAsked = true
	w.qmu.Unlock()
}

// drain writes everything queued, in order, unless another goroutine is
// already draining: that one picks up what was queued meanwhile (the
// emptiness check and the hand-over happen under qmu), so a goroutine
// never waits for a write it did not start — the reader of one peer must
// never block behind a write to the other.
func (w *writer) drain() {
	w.qmu.Lock()
	if w.draining {
		w.qmu.Unlock()
		return
	}
	w.draining = true
	for {
		items := w.queue
		w.queue = nil
		if len(items) == 0 {
			if w.closeAsked && !w.closed {
				w.closed = true
				if c, ok := w.w.(io.Closer); ok && w.name == "agent" {
					c.Close()
				}
			}
			w.draining = false
			w.qmu.Unlock()
			return
		}
		w.qmu.Unlock()
		for _, it := range items {
			if !w.failed.Load() {
				for _, b := range it.chunks {
					if _, err := w.w.Write(b); err != nil {
						w.log.Warn("write failed; discarding further output", "to", w.name, "err", err)
						w.failed.Store(true)
						break
					}
				}
			}
			it.release.release()
		}
		w.qmu.Lock()
	}
}

// idle reports whether nothing is queued or being written.
func (w *writer) idle() bool {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	return !w.draining && len(w.queue) == 0
}
