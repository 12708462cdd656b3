package transport

import (
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
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
	draining   bool          // a goroutine is writing the queue out
	idleWait   chan struct{} // closed when draining stops (only while someone waits)

	failed  atomic.Bool
	fine    atomic.Bool   // write in finePiece pieces
	written atomic.Uint64 // bytes written so far: progress, for the shutdown waits
}

// setFine makes later writes go out in small pieces (see finePiece).
func (w *writer) setFine() { w.fine.Store(true) }

// Pieces bound one Write of a long chunk, so progress to a slow reader
// shows as it happens: writePiece always (a read batch is no larger, so
// pass-through batches still leave in one write), finePiece once the
// session ends (setFine), when a stalled reader must be told from a slow
// one within the grace period.
const (
	writePiece = readBufSize
	finePiece  = 64 << 10
)

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
			if w.idleWait != nil {
				close(w.idleWait)
				w.idleWait = nil
			}
			w.qmu.Unlock()
			return
		}
		w.qmu.Unlock()
		for _, it := range items {
			if !w.failed.Load() {
				for _, b := range it.chunks {
					if err := w.write(b); err != nil {
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

// kick makes sure what is queued gets written without the caller doing
// it: if nobody is writing and something is queued, a goroutine is
// started that drains the queue and exits (the caller must not block on
// this peer).
func (w *writer) kick() {
	w.qmu.Lock()
	work := !w.draining && (len(w.queue) > 0 || w.closeAsked && !w.closed)
	w.qmu.Unlock()
	if work {
		go w.drain() // exits once the queue is empty
	}
}

// write writes b, in pieces when it is long, counting progress.
func (w *writer) write(b []byte) error {
	piece := writePiece
	if w.fine.Load() {
		piece = finePiece
	}
	for len(b) > 0 {
		n := min(len(b), piece)
		if _, err := w.w.Write(b[:n]); err != nil {
			return err
		}
		w.written.Add(uint64(n))
		b = b[n:]
	}
	return nil
}

// waitIdle waits until nothing is queued or being written and reports
// true; it gives up and reports false when no byte was written for stall
// (the reader stopped reading). Someone must be draining, or start to.
func (w *writer) waitIdle(stall time.Duration) bool {
	t := time.NewTimer(stall)
	defer t.Stop()
	last := w.written.Load()
	for {
		w.qmu.Lock()
		if !w.draining && len(w.queue) == 0 {
			w.qmu.Unlock()
			return true
		}
		if w.idleWait == nil {
			w.idleWait = make(chan struct{})
		}
		ch := w.idleWait
		w.qmu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			now := w.written.Load()
			if now == last {
				return false
			}
			last = now
			t.Reset(stall)
		}
	}
}
