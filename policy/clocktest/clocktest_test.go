package clocktest

import (
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestAdvanceFiresInDeadlineOrder(t *testing.T) {
	c := NewFakeClock(t0)
	var got []string
	rec := func(name string) func() {
		return func() { got = append(got, name+"@"+c.Now().Sub(t0).String()) }
	}
	c.AfterFunc(3*time.Second, rec("c"))
	c.AfterFunc(time.Second, rec("a"))
	c.AfterFunc(2*time.Second, rec("b1"))
	c.AfterFunc(2*time.Second, rec("b2")) // same deadline: creation order
	c.AfterFunc(10*time.Second, rec("late"))

	c.Advance(3 * time.Second)
	want := []string{"a@1s", "b1@2s", "b2@2s", "c@3s"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fired %q, want %q", got, want)
	}
	if now := c.Now(); !now.Equal(t0.Add(3 * time.Second)) {
		t.Errorf("Now: got %v, want start+3s", now)
	}
	if p := c.Pending(); len(p) != 1 || !p[0].Equal(t0.Add(10*time.Second)) {
		t.Errorf("Pending: got %v, want [start+10s]", p)
	}
}

func TestTimersScheduledByCallbacks(t *testing.T) {
	c := NewFakeClock(t0)
	var got []time.Duration
	var tick func()
	tick = func() {
		got = append(got, c.Now().Sub(t0))
		if len(got) < 5 {
			c.AfterFunc(time.Second, tick)
		}
	}
	c.AfterFunc(time.Second, tick)
	c.Advance(3500 * time.Millisecond)
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ticks at %v, want %v", got, want)
	}
	c.Advance(time.Hour)
	if len(got) != 5 {
		t.Errorf("ticks: got %d, want 5", len(got))
	}
}

func TestStop(t *testing.T) {
	c := NewFakeClock(t0)
	fired := false
	tm := c.AfterFunc(time.Second, func() { fired = true })
	if !tm.Stop() {
		t.Errorf("Stop: got false, want true for a pending timer")
	}
	if tm.Stop() {
		t.Errorf("second Stop: got true, want false")
	}
	c.Advance(time.Minute)
	if fired {
		t.Errorf("stopped timer fired")
	}
	tm = c.AfterFunc(time.Second, func() {})
	c.Advance(time.Second)
	if tm.Stop() {
		t.Errorf("Stop after firing: got true, want false")
	}
}

func TestZeroDelayFiresOnNextAdvance(t *testing.T) {
	c := NewFakeClock(t0)
	n := 0
	c.AfterFunc(0, func() { n++ })
	c.AfterFunc(-time.Second, func() { n++ })
	if n != 0 {
		t.Fatalf("fired before Advance")
	}
	c.Advance(0)
	if n != 2 {
		t.Errorf("fired %d, want 2", n)
	}
	if !c.Now().Equal(t0) {
		t.Errorf("Now: got %v, want unchanged", c.Now())
	}
}

// A callback may stop another timer due in the same Advance.
func TestCallbackStopsLaterTimer(t *testing.T) {
	c := NewFakeClock(t0)
	var late interface{ Stop() bool }
	fired := false
	c.AfterFunc(time.Second, func() { late.Stop() })
	late = c.AfterFunc(2*time.Second, func() { fired = true })
	c.Advance(time.Minute)
	if fired {
		t.Errorf("timer stopped by an earlier callback fired")
	}
}
