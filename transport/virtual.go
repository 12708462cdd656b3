package transport

import (
	"sort"
	"time"
)

// Virtual is an Output with virtual time, for offline replay and tests:
// frames are collected instead of written, and timers fire only when the
// caller advances the clock. Not safe for concurrent use.
type Virtual struct {
	now    time.Time
	seq    uint64
	timers []*vtimer
	Client [][]byte // frames written to the client, in order
	Agent  [][]byte // frames written to the agent, in order
}

type vtimer struct {
	at      time.Time
	seq     uint64
	fn      func()
	stopped bool
	fired   bool
}

// NewVirtual returns a Virtual output whose clock starts at start.
func NewVirtual(start time.Time) *Virtual { return &Virtual{now: start} }

func (v *Virtual) Now() time.Time { return v.now }

func (v *Virtual) WriteClient(line []byte) { v.Client = append(v.Client, append([]byte(nil), line...)) }
func (v *Virtual) WriteAgent(line []byte)  { v.Agent = append(v.Agent, append([]byte(nil), line...)) }

// Schedule arms a virtual timer.
func (v *Virtual) Schedule(d time.Duration, fn func()) func() bool {
	v.seq++
	t := &vtimer{at: v.now.Add(d), seq: v.seq, fn: fn}
	v.timers = append(v.timers, t)
	return func() bool {
		if t.fired || t.stopped {
			return false
		}
		t.stopped = true
		return true
	}
}

// Next returns the deadline of the earliest armed timer.
func (v *Virtual) Next() (time.Time, bool) {
	v.prune()
	if len(v.timers) == 0 {
		return time.Time{}, false
	}
	return v.timers[0].at, true
}

func (v *Virtual) prune() {
	live := v.timers[:0]
	for _, t := range v.timers {
		if !t.stopped && !t.fired {
			live = append(live, t)
		}
	}
	v.timers = live
	sort.SliceStable(v.timers, func(i, j int) bool {
		if !v.timers[i].at.Equal(v.timers[j].at) {
			return v.timers[i].at.Before(v.timers[j].at)
		}
		return v.timers[i].seq < v.timers[j].seq
	})
}

// AdvanceTo moves the clock to t, firing every timer due on the way in
// deadline order (the clock reads each timer's deadline while it fires).
// A time before now leaves the clock where it is.
func (v *Virtual) AdvanceTo(t time.Time) {
	for {
		at, ok := v.Next()
		if !ok || at.After(t) {
			break
		}
		tm := v.timers[0]
		if at.After(v.now) {
			v.now = at
		}
		tm.fired = true
		tm.fn()
	}
	if t.After(v.now) {
		v.now = t
	}
}

// Advance moves the clock forward by d.
func (v *Virtual) Advance(d time.Duration) { v.AdvanceTo(v.now.Add(d)) }

// TakeClient returns and clears the frames written to the client.
func (v *Virtual) TakeClient() [][]byte { out := v.Client; v.Client = nil; return out }

// TakeAgent returns and clears the frames written to the agent.
func (v *Virtual) TakeAgent() [][]byte { out := v.Agent; v.Agent = nil; return out }
