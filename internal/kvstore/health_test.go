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
