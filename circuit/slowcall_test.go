package circuit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// lateStore is a memory store whose calls wait for the test: each Get and
// CompareAndSwap blocks until the test lets it through (answer) or its
// context ends; Ping answers with ping.
type lateStore struct {
	*memStore
	started chan struct{} // one send per call that began waiting
	answer  chan struct{} // one receive lets one call through
	ping    chan error    // one receive per Ping
	ended   chan error    // a call's context ended first: its error
}

func newLateStore() *lateStore {
	return &lateStore{memStore: newMemStore(), started: make(chan struct{}), answer: make(chan struct{}),
		ping: make(chan error), ended: make(chan error, 4)}
}

func (s *lateStore) wait(ctx context.Context) error {
	s.started <- struct{}{}
	select {
	case <-s.answer:
		return nil
	case <-ctx.Done():
		s.ended <- ctx.Err()
		return ctx.Err()
	}
}

func (s *lateStore) Get(ctx context.Context, id string) (*Record, uint64, error) {
	if err := s.wait(ctx); err != nil {
		return nil, 0, err
	}
	return s.memStore.Get(ctx, id)
}

func (s *lateStore) CompareAndSwap(ctx context.Context, id string, rec Record, rev uint64) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.memStore.CompareAndSwap(ctx, id, rec, rev)
}

func (s *lateStore) Ping(ctx context.Context) error { return <-s.ping }

// testTimer replaces Circuits' timers: each timer armed is announced on
// armed, and fires when the test sends on its channel.
type testTimer struct{ armed chan chan time.Time }

func (tt testTimer) after(time.Duration) (<-chan time.Time, func() bool) {
	ch := make(chan time.Time, 1)
	tt.armed <- ch
	return ch, func() bool { return true }
}

func lateCircuits(st Store, logs *bytes.Buffer) (*Circuits, testTimer) {
	c := New(Config{Store: st, Seed: 1, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	tt := testTimer{armed: make(chan chan time.Time)}
	c.after = tt.after
	return c, tt
}

// A store that answers late but answers a ping is slow, not down: the
// call outlives its timeout, the store is pinged at each timeout, and
// the call is waited for until it answers. The failure report lands (the
// circuit opens for everyone), nothing is logged as unavailable and the
// store is not left alone afterwards: the next session's Acquire asks it
// and parks behind the probe instead of deciding alone.
func TestSlowStoreIsWaitedFor(t *testing.T) {
	st := newLateStore()
	var logs bytes.Buffer
	c, tt := lateCircuits(st, &logs)
	type result struct {
		s   Snapshot
		err error
	}
	res := make(chan result, 1)
	go func() {
		s, err := c.Fail(ctx, testKey, backoff(5*time.Second), "a", t0)
		res <- result{s, err}
	}()
	for range 2 { // the read, then the swap: each late by two timeouts
		timer := <-tt.armed
		<-st.started
		for range 2 {
			timer <- time.Time{}
			st.ping <- nil // the server answers: slow
			timer = <-tt.armed
		}
		st.answer <- struct{}{}
	}
	r := <-res
	if r.err != nil || r.s.State != StateOpen {
		t.Fatalf("Fail on a slow store = %+v, %v; want the circuit open, no error", r.s, r.err)
	}
	// The store answers at once from here on. a's Acquire takes the
	// probe; a second process's asks the store (it was not left alone)
	// and parks behind that probe.
	stopAnswering := make(chan struct{})
	answering := make(chan struct{})
	go func() { // ended by stopAnswering below
		defer close(answering)
		for {
			select {
			case <-tt.armed:
			case <-st.started:
				st.answer <- struct{}{}
			case <-stopAnswering:
				return
			}
		}
	}()
	defer func() { close(stopAnswering); <-answering }()
	mustAcquire(t, c, "a", t0.Add(5*time.Second), Probe)
	b, _ := lateCircuits(st, &logs)
	b.after = c.after
	mustAcquire(t, b, "b", t0.Add(5*time.Second), Park)
	if strings.Contains(logs.String(), "circuit store unavailable") || strings.Count(logs.String(), "circuit store slow") != 1 {
		t.Fatalf("logs on a slow store: want one \"circuit store slow\" and no \"unavailable\":\n%s", logs.String())
	}
}

// A store that answers late and whose connection does not answer a ping
// either is down: the call ends at the first timeout, as a timeout
// (context.DeadlineExceeded, so a swap's outcome would be read back), the
// store is logged unavailable and left alone, and the session decides
// alone — a store that is down never blocks a turn.
func TestStalledStoreFailsAtTheTimeout(t *testing.T) {
	st := newLateStore()
	var logs bytes.Buffer
	c, tt := lateCircuits(st, &logs)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Fail(ctx, testKey, backoff(5*time.Second), "a", t0)
		errc <- err
	}()
	timer := <-tt.armed
	<-st.started
	timer <- time.Time{}
	st.ping <- errors.New("no pong")
	if err := <-st.ended; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the stalled call's context ended with %v, want context.DeadlineExceeded", err)
	}
	if err := <-errc; !errors.Is(err, ErrStore) {
		t.Fatalf("Fail on a stalled store: %v, want ErrStore", err)
	}
	d, err := c.Acquire(ctx, testKey, "a", t0.Add(100*time.Millisecond)) // left alone: no store call
	if !errors.Is(err, ErrStore) || d.Action != Go {
		t.Fatalf("Acquire after the stalled store = %+v, %v; want Go (alone) with ErrStore", d, err)
	}
	if strings.Count(logs.String(), "circuit store unavailable") != 1 {
		t.Fatalf("want the store logged unavailable once:\n%s", logs.String())
	}
}

// inFlightStore is a replicated store (a Pinger) whose swaps lose n
// times to a write in flight: the re-read shows the revision the swap
// lost at, as a leader holding the winner for its quorum answers.
type inFlightStore struct {
	*conflictStore
}

func (inFlightStore) Ping(context.Context) error { return nil }

// On a replicated store a swap lost at a revision the re-read still
// shows is a write in flight, not a new racer: it is waited for without
// spending a round (more than casRounds such losses still end in the
// write, within the slow budget), and the waits stay within maxConflictWait. The same losses on
// a local store are rounds (TestContentionBacksOffAndIsNotAStoreFailure).
func TestSwapLostToAWriteInFlightIsWaitedFor(t *testing.T) {
	st := inFlightStore{&conflictStore{memStore: newMemStore(), n: casRounds + 8}}
	c := New(Config{Store: st})
	now := t0
	c.clock = func() time.Time { return now }
	var waits []time.Duration
	c.sleep = func(_ context.Context, d time.Duration) { waits = append(waits, d); now = now.Add(d) }
	s, err := c.Fail(ctx, testKey, backoff(time.Second), "a", t0)
	if err != nil || s.State != StateOpen {
		t.Fatalf("Fail after %d swaps lost to a write in flight = %+v, %v; want the circuit open", casRounds+8, s, err)
	}
	if len(waits) != casRounds+8 {
		t.Fatalf("%d waits for %d lost swaps", len(waits), casRounds+8)
	}
	for k, w := range waits {
		if w <= 0 || w > maxConflictWait+1 {
			t.Errorf("wait %d: %v, want in (0, %v]", k, w, maxConflictWait)
		}
	}
	// Beyond the slow budget of waiting (four timeouts, on the operation's clock) it gives up
	// as contention: the store answered, it is not a store failure.
	st.n, st.lost = 1<<30, 0
	_, err = c.Fail(ctx, Key{Provider: "other", Scope: "provider"}, backoff(time.Second), "a", t0)
	if !errors.Is(err, ErrContended) || errors.Is(err, ErrStore) {
		t.Fatalf("after the slow budget of swaps lost to a write in flight: %v, want ErrContended and not ErrStore", err)
	}
}
