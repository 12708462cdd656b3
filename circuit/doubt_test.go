package circuit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// heldStore is a replicated store's stale leader: while holding, a swap
// times out unanswered (the caller is told it failed) yet is kept in the
// leader's log; land commits what it kept, as that leader does when the
// cluster comes back and elects it again.
type heldStore struct {
	*memStore
	mu      sync.Mutex
	holding bool
	kept    []heldSwap
}

type heldSwap struct {
	id  string
	rec Record
	rev uint64
}

var errTimedOut = errors.New("nats: timeout")

// holdSwapsOnly starts holding: reads still answer (the stale leader
// serves them), swaps time out and are kept.
func (s *heldStore) holdSwapsOnly(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	s.holding = true
	s.mu.Unlock()
}

func (s *heldStore) CompareAndSwap(ctx context.Context, id string, rec Record, rev uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holding {
		s.kept = append(s.kept, heldSwap{id, rec, rev})
		return errTimedOut
	}
	return s.memStore.CompareAndSwap(ctx, id, rec, rev)
}

// land commits the kept swaps in order (each checked against its
// revision, as the log's entries are when applied).
func (s *heldStore) land(t *testing.T) (landed int) {
	t.Helper()
	s.mu.Lock()
	kept := s.kept
	s.kept, s.holding = nil, false
	s.mu.Unlock()
	for _, k := range kept {
		switch err := s.memStore.CompareAndSwap(ctx, k.id, k.rec, k.rev); {
		case err == nil:
			landed++
		case !errors.Is(err, ErrConflict):
			t.Fatal(err)
		}
	}
	return landed
}

// stored is the record as the store holds it, read past this process.
func (s *heldStore) stored(t *testing.T) (*Record, uint64, error) {
	t.Helper()
	k, err := testKey.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	return s.memStore.Get(ctx, k.ID())
}

func newHeldStore(t *testing.T) (*heldStore, *Circuits, time.Time) {
	t.Helper()
	s := &heldStore{memStore: newMemStore()}
	return s, New(Config{Store: s, Seed: 7, StoreRetry: time.Second}), time.Now()
}

// A probe lease whose swap was reported failed (the session parked, on
// its view) and landed later is taken back by the next operation that
// reads it: the circuit is as it was, nobody waits for a probe that never
// comes.
func TestSwapReportedFailedThatLandsLateIsTakenBack(t *testing.T) {
	s, c, now := newHeldStore(t)
	before := mustFail(t, c, backoff(10*time.Second), "maj/1", now)
	rec0, _, _ := c.Get(ctx, testKey, now)
	t0 := now.Add(11 * time.Second)
	s.holdSwapsOnly(t)
	d, err := c.Acquire(ctx, testKey, "min/1", t0)
	if !errors.Is(err, ErrStore) || d.Action != Park {
		t.Fatalf("Acquire whose swap timed out: %+v, %v; want Park with ErrStore", d, err)
	}
	if n := s.land(t); n != 1 {
		t.Fatalf("%d swaps landed, want the lease's", n)
	}
	if rec, _, _ := s.stored(t); rec.Lease == nil || rec.Lease.Holder != "min/1" {
		t.Fatalf("the late lease is not there to take back: %+v", rec)
	}
	later := t0.Add(3 * time.Second) // past StoreRetry
	rec, _, err := c.Get(ctx, testKey, later)
	if err != nil || rec.Lease != nil || rec.Probes != rec0.Probes || !rec.OpenUntil.Equal(*before.CooldownUntil) {
		t.Fatalf("after the late landing: %+v, %v; want the record as before %+v", rec, err, rec0)
	}
	if len(c.doubts) != 0 {
		t.Fatalf("doubts left after the take-back: %v", c.doubts)
	}
}

// A failure whose swap was reported failed and landed later stands: it
// is a fact a session observed (on a file store a swap past its timeout
// still completes), not a decision nobody took; only leases are taken
// back.
func TestFailureThatLandsLateStands(t *testing.T) {
	s, c, now := newHeldStore(t)
	s.holdSwapsOnly(t)
	if _, err := c.Fail(ctx, testKey, backoff(10*time.Second), "min/1", now); !errors.Is(err, ErrStore) {
		t.Fatalf("Fail whose swap timed out: %v, want ErrStore", err)
	}
	if n := s.land(t); n != 1 {
		t.Fatalf("%d swaps landed, want the opening", n)
	}
	later := now.Add(3 * time.Second)
	d, err := c.Acquire(ctx, testKey, "other/1", later)
	if err != nil || d.Action != Park {
		t.Fatalf("Acquire after the late opening: %+v, %v; want Park on the open circuit", d, err)
	}
	if rec, _, _ := s.stored(t); rec == nil || !rec.OpenAt(later) || rec.Failures != 1 {
		t.Fatalf("stored: %+v; want the failure's opening kept", rec)
	}
}

// leaseInDoubt opens the circuit, then has "min/1" take the probe lease
// at the end of its cooldown (t0) with the swap held: a lease in doubt.
func leaseInDoubt(t *testing.T) (*heldStore, *Circuits, time.Time) {
	t.Helper()
	s, c, now := newHeldStore(t)
	mustFail(t, c, backoff(10*time.Second), "maj/1", now)
	s.holdSwapsOnly(t)
	t0 := now.Add(11 * time.Second)
	if _, err := c.Acquire(ctx, testKey, "min/1", t0); !errors.Is(err, ErrStore) {
		t.Fatal(err)
	}
	return s, c, t0
}

// Only this process's own late write is undone, and only if nothing was
// written over it; a swap that never landed is forgotten once the record
// moved on.
func TestDoubtsSettleWithoutTakingBackOthersWrites(t *testing.T) {
	t.Run("overwritten", func(t *testing.T) {
		s, c, t0 := leaseInDoubt(t)
		s.land(t)
		other := New(Config{Store: s.memStore, Seed: 8})
		if _, err := other.Progress(ctx, testKey, t0.Add(time.Second)); err != nil { // a probe elsewhere succeeded
			t.Fatal(err)
		}
		rec, _, err := c.Get(ctx, testKey, t0.Add(3*time.Second))
		if err != nil || !rec.Closed() {
			t.Fatalf("the other writer's close: %+v, %v; want it kept", rec, err)
		}
		if len(c.doubts) != 0 {
			t.Fatalf("doubts left: %v", c.doubts)
		}
	})
	t.Run("never landed", func(t *testing.T) {
		s, c, t0 := leaseInDoubt(t)
		s.mu.Lock()
		s.kept, s.holding = nil, false // a new leader's term: the entry is gone
		s.mu.Unlock()
		if _, _, err := c.Get(ctx, testKey, t0.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		if len(c.doubts) != 1 {
			t.Fatalf("a doubt at the revision still in force was dropped: %v", c.doubts)
		}
		d, err := c.Acquire(ctx, testKey, "min/1", t0.Add(3*time.Second)) // its own probe now, through the store
		if err != nil || d.Action != Probe {
			t.Fatalf("Acquire once the store answers: %+v, %v; want Probe", d, err)
		}
		if len(c.doubts) != 0 {
			t.Fatalf("doubts left after the record moved on: %v", c.doubts)
		}
	})
}
