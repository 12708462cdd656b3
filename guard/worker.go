package guard

import (
	"sync"

	"github.com/acp-guard/acp-guard/transport"
)

// worker runs the guard's I/O off the relay's lock: the attempt log's
// appends (journal.go), the circuit store's calls (circuit.go) and the
// held-prompt board's writes and watch (held.go) each have one. In the
// live proxy (a Ctl with a Poster) each job is queued to one goroutine
// that runs the queue front to back — so one prompt's circuit Fail always
// reaches the store before its later Acquire, and records are appended
// in the order they were decided — and posts each job's result back into
// the relay's event loop (transport.Relay.Poster), where it runs like any
// other event. Without a Poster (the offline player, unit tests) jobs run
// in line and their results at once.
//
// The goroutine is started by the first job and owned by the Guard:
// close runs what is queued and ends it; nothing else waits for it. A
// job queued after close is dropped: the session is over (leases run
// out by their TTL, board entries expire, and nothing is scheduled any
// more).
type worker struct {
	mu      sync.Mutex
	queue   []workerJob
	wake    chan struct{} // cap 1: jobs queued
	done    chan struct{} // closed when the goroutine returns
	started bool
	closing bool
}

type workerJob struct {
	run  func() func() // the I/O; returns what to run in the event loop (nil: nothing)
	post func(func())
}

// do runs op off the event loop, then its result (if any) in the event
// loop. A result that acts on a prompt is armed under the prompt's fence
// (fence.go) by whoever builds op.
func (w *worker) do(c transport.Ctl, op func() func()) {
	post := posterOf(c)
	if post == nil {
		if then := op(); then != nil {
			then()
		}
		return
	}
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return
	}
	w.queue = append(w.queue, workerJob{run: op, post: post})
	if !w.started {
		w.started = true
		w.wake = make(chan struct{}, 1)
		w.done = make(chan struct{})
		go w.loop()
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// loop is the goroutine: it runs queued jobs front to back and returns
// once close was called and the queue is empty.
func (w *worker) loop() {
	defer close(w.done)
	for {
		w.mu.Lock()
		jobs := w.queue
		w.queue = nil
		closing := w.closing
		w.mu.Unlock()
		if len(jobs) == 0 {
			if closing {
				return
			}
			<-w.wake
			continue
		}
		for _, job := range jobs {
			if then := job.run(); then != nil {
				job.post(then)
			}
		}
	}
}

// close runs what is queued and ends the goroutine.
func (w *worker) close() {
	w.mu.Lock()
	w.closing = true
	started := w.started
	w.mu.Unlock()
	if !started {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.done
}

// posterOf returns the Ctl's way back into the event loop (nil: none).
func posterOf(c transport.Ctl) func(func()) {
	if pc, ok := c.(interface{ Poster() func(func()) }); ok {
		return pc.Poster()
	}
	return nil
}
