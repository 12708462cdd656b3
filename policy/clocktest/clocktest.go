// Package clocktest provides a deterministic [policy.Clock] for tests.
//
// A FakeClock only moves when told to: Advance(d) fires every timer that
// falls due within d, in deadline order (timers with the same deadline in
// the order they were created), each from the calling goroutine, with Now
// set to the timer's deadline while it runs. Timers scheduled by a callback
// fire in the same Advance when they fall due within it. Nothing depends on
// wall time, so tests that use it never sleep.
package clocktest

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/acp-guard/acp-guard/policy"
)

// FakeClock is a manually advanced clock, safe for concurrent use.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*fakeTimer // pending, unordered
}

var _ policy.Clock = (*FakeClock)(nil)

// NewFakeClock returns a clock that reads start until advanced.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start}
}

// Now returns the clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f for Now()+d. A timer with d ≤ 0 fires on the next
// Advance, including Advance(0).
func (c *FakeClock) AfterFunc(d time.Duration, f func()) policy.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{clock: c, when: c.now.Add(max(d, 0)), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock forward by d (negative d is treated as zero),
// firing every timer that falls due on the way, in deadline order.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(max(d, 0))
	c.mu.Unlock()
	for {
		c.mu.Lock()
		i := c.next(target)
		if i < 0 {
			c.now = target
			c.mu.Unlock()
			return
		}
		t := c.timers[i]
		c.timers = slices.Delete(c.timers, i, i+1)
		if t.when.After(c.now) {
			c.now = t.when
		}
		c.mu.Unlock()
		t.f()
	}
}

// next returns the index of the earliest timer due at or before target, or
// -1. c.mu is held.
func (c *FakeClock) next(target time.Time) int {
	best := -1
	for i, t := range c.timers {
		if t.when.After(target) {
			continue
		}
		if best < 0 || t.when.Before(c.timers[best].when) ||
			(t.when.Equal(c.timers[best].when) && t.seq < c.timers[best].seq) {
			best = i
		}
	}
	return best
}

// Pending returns the deadlines of the timers not yet fired or stopped, in
// firing order.
func (c *FakeClock) Pending() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts := slices.Clone(c.timers)
	slices.SortFunc(ts, func(a, b *fakeTimer) int {
		return cmp.Or(a.when.Compare(b.when), cmp.Compare(a.seq, b.seq))
	})
	out := make([]time.Time, len(ts))
	for i, t := range ts {
		out[i] = t.when
	}
	return out
}

type fakeTimer struct {
	clock *FakeClock
	when  time.Time
	seq   uint64
	f     func()
}

// Stop removes the timer if it is still pending.
func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	return true
}
