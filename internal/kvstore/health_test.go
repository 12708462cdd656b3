package kvstore

import (
	"slices"
	"testing"
	"time"
)

type reconnecting struct{ n uint64 }

func (r *reconnecting) Reconnects() uint64 { return r.n }

// TestHealth: a failed store is left alone for the first wait, doubling to
// the limit; an answer or a new connection ends it; only the first failure
// of an outage is reported as first.
func TestHealth(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	st := &reconnecting{}
	h := NewHealth(st, 500*time.Millisecond, 2*time.Second)
	h.draw = func(time.Duration) time.Duration { return 0 } // every pause its whole step
	if h.Skip(t0) {
		t.Fatal("a healthy store is skipped")
	}
	var waits []time.Duration
	for i := 0; i < 4; i++ {
		first, wait := h.Failed(t0)
		if first != (i == 0) {
			t.Errorf("failure %d: first %v", i, first)
		}
		waits = append(waits, wait)
	}
	if want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 2 * time.Second}; !slices.Equal(waits, want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
	if !h.Skip(at(1999*time.Millisecond)) || h.Skip(at(2*time.Second)) {
		t.Error("the store is not left alone for exactly the last wait")
	}
	st.n++ // the connection came back
	if h.Skip(at(time.Millisecond)) {
		t.Error("a store that reconnected is still skipped")
	}
	if !h.Answered() || h.Answered() {
		t.Error("Answered reports a recovery once, after a failure")
	}
	if first, wait := h.Failed(t0); !first || wait != 500*time.Millisecond {
		t.Errorf("after a recovery: first %v, wait %v; want true, 500ms", first, wait)
	}
	if NewHealth(struct{}{}, time.Second, 0).max != time.Second {
		t.Error("a limit below the first wait is not raised to it")
	}
}

// TestHealthPauseJittered: each pause is drawn in [step/2, step] — the
// draw's whole range maps onto it — so processes that failed together
// come back spread, never later than the step.
func TestHealthPauseJittered(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		draw func(time.Duration) time.Duration
		want []time.Duration
	}{
		{func(time.Duration) time.Duration { return 0 }, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}},
		{func(n time.Duration) time.Duration { return n - 1 }, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}},
	} {
		h := NewHealth(nil, 500*time.Millisecond, 2*time.Second)
		var asked []time.Duration
		h.draw = func(n time.Duration) time.Duration { asked = append(asked, n); return c.draw(n) }
		var got []time.Duration
		for range c.want {
			_, wait := h.Failed(t0)
			got = append(got, wait)
			if !h.Skip(t0.Add(wait-1)) || h.Skip(t0.Add(wait)) {
				t.Errorf("pause %v: not left alone for exactly it", wait)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("pauses %v, want %v", got, c.want)
		}
		if want := []time.Duration{250*time.Millisecond + 1, 500*time.Millisecond + 1, time.Second + 1}; !slices.Equal(asked, want) {
			t.Errorf("draws over %v, want %v (half the step, inclusive)", asked, want)
		}
	}
}

// TestHealthUnsettled: a store between leaders counts as down (the first
// such failure is the one to log; its answer is a recovery) but is asked
// again at once, and its pause does not grow.
func TestHealthUnsettled(t *testing.T) {
	t0 := time.Unix(1000, 0)
	h := NewHealth(nil, 500*time.Millisecond, 2*time.Second)
	h.draw = func(time.Duration) time.Duration { return 0 }
	if !h.Unsettled(t0) || h.Unsettled(t0) {
		t.Error("Unsettled: only the first failure of an outage is first")
	}
	if h.Skip(t0) {
		t.Error("a store between leaders is left alone")
	}
	if first, wait := h.Failed(t0); first || wait != 500*time.Millisecond {
		t.Errorf("a failure after Unsettled: first %v, wait %v; want false, the first step", first, wait)
	}
	h.Unsettled(t0.Add(100 * time.Millisecond))
	if h.Skip(t0.Add(100 * time.Millisecond)) {
		t.Error("Unsettled after a failure: still left alone")
	}
	if _, wait := h.Failed(t0); wait != time.Second {
		t.Errorf("the step after Unsettled: %v, want 1s (Unsettled does not grow it)", wait)
	}
	if !h.Answered() {
		t.Error("an answer after Unsettled is not a recovery")
	}
}
