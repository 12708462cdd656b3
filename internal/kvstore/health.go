package kvstore

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Health is when a store that failed is asked again: it is left alone for
// a pause after the failure — its step first, doubling with each further
// failure up to max, and the pause itself drawn at random in
// [step/2, step], so that the processes that lost the store together do
// not ask it again together — and asked at once as soon as it answers,
// or — for a store that reconnects (NATS) — as soon as its connection
// came back. Times are the caller's (each operation's now), never read
// here. Safe for concurrent use.
type Health struct {
	first, max time.Duration
	reconnects func() uint64 // nil: the store does not reconnect
	// draw returns a random duration in [0, n) (tests pin it).
	draw func(n time.Duration) time.Duration

	mu    sync.Mutex
	down  bool          // the store failed and has not answered since
	until time.Time     // skip the store until then
	wait  time.Duration // the current step of the pause between retries
	conns uint64        // the store's reconnect count when it failed
}

// NewHealth returns the health of store, whose reconnects it follows when
// it has a Reconnects() uint64 method.
func NewHealth(store any, first, limit time.Duration) *Health {
	h := &Health{first: first, max: max(first, limit), draw: rand.N[time.Duration]}
	if rc, ok := store.(interface{ Reconnects() uint64 }); ok {
		h.reconnects = rc.Reconnects
	}
	return h
}

// Skip reports whether a call at now should fail at once instead of
// asking the store.
func (h *Health) Skip(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down || !now.Before(h.until) {
		return false
	}
	return h.reconnects == nil || h.reconnects() == h.conns // a new connection is asked at once
}

// Failed records a failure at now; first says it is the first since the
// store last answered (the one to log), wait how long it is left alone
// (at most the step, at least half of it).
func (h *Health) Failed(now time.Time) (first bool, wait time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	first = !h.down
	h.down = true
	h.wait = min(max(2*h.wait, h.first), h.max)
	wait = h.wait - h.draw(h.wait/2+1)
	h.until = now.Add(wait)
	if h.reconnects != nil {
		h.conns = h.reconnects()
	}
	return first, wait
}

// Unsettled records a failure that says the store is between two states
// and will answer in a moment — a replicated stream electing its leader,
// a server that rejoined and is catching up: the store counts as down
// (first as for Failed; Answered reports the recovery), but the next call
// asks it at once, and the pause's step does not grow.
func (h *Health) Unsettled(now time.Time) (first bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	first = !h.down
	h.down = true
	h.until = now
	return first
}

// Answered records that the store answered; recovered says it had failed.
func (h *Health) Answered() (recovered bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	recovered = h.down
	h.down, h.wait = false, 0
	return recovered
}
