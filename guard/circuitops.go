package guard

import (
	"sync"

	"github.com/acp-guard/acp-guard/transport"
)

// circuitOps runs the circuit store's operations off the relay's lock.
// A store operation can block for a store call's timeout (a file lock, a
// NATS round trip; at least circuit.Config.OpTimeout, more when the store
// is measured slow), so in the live proxy (a Ctl with a Poster)
// each operation is queued to one worker goroutine that runs the queue
// front to back — so one prompt's Fail always reaches the store before
// its later Acquire, and an Acquire before the probe's Progress — and
// posts each result back into the relay's event loop, where the prompt's
// epoch fences it. Without a Poster (the offline player, unit tests)
// operations run in line.
//
// The worker goroutine is started by the first operation and owned by the
// Guard: Close ends it once the queued operations ran; nothing else waits
// for it.
type circuitOps struct {
	mu      sync.Mutex
	queue   []circuitJob
	wake    chan struct{} // cap 1: operations queued
	done    chan struct{} // closed when the worker returns
	started bool
	closing bool
}

type circuitJob struct {
	run  func() func() // the store operation; returns what to run in the event loop (nil: nothing)
	post func(func())
}

// do runs op off the event loop and then its result in the event loop.
func (o *circuitOps) do(c transport.Ctl, op func() func()) {
	post := posterOf(c)
	if post == nil {
		if then := op(); then != nil {
			then()
		}
		return
	}
	o.mu.Lock()
	if o.closing {
		o.mu.Unlock()
		return // the session is over; leases run out by their TTL
	}
	o.queue = append(o.queue, circuitJob{run: op, post: post})
	if !o.started {
		o.started = true
		o.wake = make(chan struct{}, 1)
		o.done = make(chan struct{})
		go o.loop()
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// loop is the worker goroutine.
func (o *circuitOps) loop() {
	defer close(o.done)
	for {
		o.mu.Lock()
		jobs := o.queue
		o.queue = nil
		closing := o.closing
		o.mu.Unlock()
		if len(jobs) == 0 {
			if closing {
				return
			}
			<-o.wake
			continue
		}
		for _, job := range jobs {
			if then := job.run(); then != nil {
				job.post(then)
			}
		}
	}
}

// close runs what is queued and ends the worker.
func (o *circuitOps) close() {
	o.mu.Lock()
	o.closing = true
	started := o.started
	o.mu.Unlock()
	if !started {
		return
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
	<-o.done
}
