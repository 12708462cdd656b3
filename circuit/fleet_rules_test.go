package circuit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// The rules that keep circuits sound with many sessions (issue 24): writes
// only on change, the circuit's own schedule, probe rotation, stale
// records, contention, latency-scaled timeouts and store recovery.

func TestFailWritesOnlyOnChange(t *testing.T) {
	ms := newMemStore()
	c := newTest(t, ms)
	mustFail(t, c, backoff(2*time.Second), "s0", t0)
	// 199 more sessions fail at once on the open circuit, each with its
	// own backoff: none moves the cooldown, nothing is written.
	for i := 1; i < 200; i++ {
		mustFail(t, c, backoff(time.Duration(1+i%4)*time.Second), fmt.Sprintf("s%d", i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	if _, puts := ms.counts(); puts != 1 {
		t.Fatalf("%d writes for 200 failures on one cooldown, want 1", puts)
	}
	// A provider hint that moves the cooldown by less than a second: no write.
	mustFail(t, c, transient(t0.Add(2*time.Second+500*time.Millisecond)), "h", t0.Add(time.Second))
	// One well past it, and one that turns the circuit hard: written.
	s := mustFail(t, c, transient(t0.Add(time.Minute)), "h", t0.Add(time.Second))
	mustFail(t, c, Failure{Class: "hard", Code: "quota_limited"}, "h", t0.Add(time.Second))
	if _, puts := ms.counts(); puts != 3 || !s.CooldownUntil.Equal(t0.Add(time.Minute)) {
		t.Fatalf("%d writes, cooldown until %v; want 3 writes and the hint's minute", puts, s.CooldownUntil)
	}
	rec, _, _ := c.Get(ctx, testKey, t0)
	if rec.Class != "hard" || rec.Failures != 3 {
		t.Fatalf("record %+v: want class hard, 3 failures written", rec)
	}
}

// The cooldown follows the circuit's schedule: each failed probe doubles
// the step the opening failure set, whichever session probed and whatever
// its own backoff was.
func TestCooldownFollowsTheCircuitsSchedule(t *testing.T) {
	c := newTest(t, newMemStore())
	now := t0
	mustFail(t, c, backoff(time.Second), "first", now)
	want := now.Add(time.Second)
	for k, own := range []time.Duration{time.Second, 16 * time.Second, time.Second, 4 * time.Second} {
		now = want.Add(time.Second) // every other session asked first: no rotation wait
		prober := fmt.Sprintf("p%d", k)
		mustAcquire(t, c, prober, now, Probe)
		now = now.Add(100 * time.Millisecond)
		s := mustFail(t, c, backoff(own), prober, now)
		want = now.Add(time.Second << (k + 1))
		if !s.CooldownUntil.Equal(want) {
			t.Fatalf("probe %d (own backoff %v): cooldown until +%v, want +%v", k, own, s.CooldownUntil.Sub(t0), want.Sub(t0))
		}
	}
	// A failure after the cooldown with nobody probing re-opens it for the
	// same step, without doubling.
	now = want.Add(5 * time.Second)
	s := mustFail(t, c, backoff(time.Second), "late", now)
	if got := s.CooldownUntil.Sub(now); got != 16*time.Second {
		t.Fatalf("late failure: cooldown %v, want the same 16 s step", got)
	}
}

// Probe ownership rotates: at the end of a cooldown the session whose
// probe failed waits out the wake spread, so a parked session takes the
// lease; only when none asks does the last prober probe again.
func TestProbeOwnershipRotates(t *testing.T) {
	c := newTest(t, newMemStore())
	mustFail(t, c, backoff(4*time.Second), "a", t0)
	end := t0.Add(4 * time.Second)
	mustAcquire(t, c, "a", end, Probe)
	fail := end.Add(100 * time.Millisecond)
	s := mustFail(t, c, backoff(8*time.Second), "a", fail)
	cool := *s.CooldownUntil  // fail + 8 s
	spread := 1 * time.Second // min(8 s / 4, ParkPoll / 2)
	d := mustAcquire(t, c, "a", cool, Park)
	if d.Wait != WaitProbe || !d.Until.Equal(cool.Add(spread)) {
		t.Fatalf("last prober at the cooldown's end: %v until +%v, want a probe wait until the spread's end", d.Wait, d.Until.Sub(cool))
	}
	b := mustAcquire(t, c, "b", cool.Add(spread/2), Probe)
	if b.Lease.Holder != "b" {
		t.Fatalf("lease %+v, want b's", b.Lease)
	}
	mustAcquire(t, c, "a", cool.Add(spread), Park) // b probes now
	// b fails too; nobody else asks: a probes after the spread.
	s = mustFail(t, c, backoff(time.Second), "b", cool.Add(spread))
	cool = *s.CooldownUntil
	mustAcquire(t, c, "a", cool.Add(spread), Probe)
}

// Parked sessions wake spread over the window after the cooldown, each at
// a stable offset that changes from one probe round to the next.
func TestWakeSpreadsAndChangesPerRound(t *testing.T) {
	c := newTest(t, newMemStore())
	mustFail(t, c, backoff(4*time.Second), "x", t0)
	cool := t0.Add(4 * time.Second)
	first := map[string]time.Duration{}
	distinct := map[time.Duration]bool{}
	for i := range 50 {
		h := fmt.Sprintf("h%d", i)
		d := mustAcquire(t, c, h, t0.Add(time.Second), Park)
		off := d.Until.Sub(cool)
		if d.Wait != WaitCooldown || off < 0 || off >= time.Second {
			t.Fatalf("%s: %v until +%v after the cooldown, want a cooldown wait within the 1 s spread", h, d.Wait, off)
		}
		first[h], distinct[off.Truncate(10*time.Millisecond)] = off, true
	}
	if len(distinct) < 30 {
		t.Fatalf("50 wake times fall on %d distinct 10 ms slots: not spread", len(distinct))
	}
	mustAcquire(t, c, "x", cool, Probe)
	s := mustFail(t, c, backoff(time.Second), "x", cool)
	moved := 0
	for h, off := range first {
		d := mustAcquire(t, c, h, cool.Add(time.Second), Park)
		if d.Until.Sub(*s.CooldownUntil) != off {
			moved++
		}
	}
	if moved < 40 {
		t.Fatalf("only %d of 50 wake offsets changed in the next round: the same session would always probe first", moved)
	}
}

// A record left open (its probe's success never reached the store) reads
// as closed once its cooldown ended long ago; the next failure opens it
// afresh.
func TestStaleOpenRecordExpiresByItsOwnCooldown(t *testing.T) {
	ms := newMemStore()
	c := newTest(t, ms)
	mustFail(t, c, backoff(time.Minute), "a", t0)
	mustAcquire(t, c, "a", t0.Add(time.Minute), Probe) // its process dies: the lease runs out at +1m30s
	for _, tt := range []struct {
		at   time.Duration
		want string
	}{
		{time.Minute + 10*time.Second, StateProbing},
		{time.Minute + 40*time.Second, StateOpen},     // lease over: the next asker probes
		{2*time.Minute + 29*time.Second, StateOpen},   // within a cooldown step of the lease's end
		{2*time.Minute + 31*time.Second, StateClosed}, // a minute step past it: stale
		{24 * time.Hour, StateClosed},
	} {
		_, snap, err := c.Get(ctx, testKey, t0.Add(tt.at))
		if err != nil || snap.State != tt.want {
			t.Errorf("at +%v: %+v, %v; want %s", tt.at, snap, err, tt.want)
		}
	}
	_, before := ms.counts()
	later := t0.Add(time.Hour)
	if d := mustAcquire(t, c, "b", later, Go); d.Circuit.CooldownUntil != nil {
		t.Fatalf("stale circuit snapshot %+v, want closed", d.Circuit)
	}
	if s, _ := c.Progress(ctx, testKey, later); s.State != StateClosed {
		t.Fatalf("Progress on a stale record: %+v", s)
	}
	if _, after := ms.counts(); after != before {
		t.Fatal("reading or closing a stale record wrote")
	}
	s := mustFail(t, c, backoff(time.Second), "c", later)
	rec, _, _ := c.Get(ctx, testKey, later)
	if !s.CooldownUntil.Equal(later.Add(time.Second)) || rec.Epoch != 2 || rec.Failures != 1 || rec.Lease != nil {
		t.Fatalf("a failure on a stale record: %+v, record %+v; want a fresh opening", s, rec)
	}
}

// conflictStore loses the first n swaps (someone else always wrote
// first), then behaves.
type conflictStore struct {
	*memStore
	mu    sync.Mutex
	n     int
	lost  int
	delay time.Duration // added to the fake clock by every call
	clock *time.Time
}

func (s *conflictStore) tick() {
	if s.clock != nil {
		*s.clock = s.clock.Add(s.delay)
	}
}

func (s *conflictStore) Get(ctx context.Context, id string) (*Record, uint64, error) {
	s.tick()
	return s.memStore.Get(ctx, id)
}

func (s *conflictStore) CompareAndSwap(ctx context.Context, id string, rec Record, rev uint64) error {
	s.tick()
	s.mu.Lock()
	lose := s.lost < s.n
	if lose {
		s.lost++
	}
	s.mu.Unlock()
	if lose {
		return ErrConflict
	}
	return s.memStore.CompareAndSwap(ctx, id, rec, rev)
}

// A lost compare-and-swap is retried against the fresh record after a
// jittered, growing wait; it never counts as a store failure.
func TestContentionBacksOffAndIsNotAStoreFailure(t *testing.T) {
	var logs bytes.Buffer
	st := &conflictStore{memStore: newMemStore(), n: casRounds - 1}
	c := New(Config{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var waits []time.Duration
	c.sleep = func(_ context.Context, d time.Duration) { waits = append(waits, d) }
	if _, err := c.Fail(ctx, testKey, backoff(time.Second), "a", t0); err != nil {
		t.Fatalf("Fail after %d lost swaps: %v", casRounds-1, err)
	}
	if len(waits) != casRounds-1 {
		t.Fatalf("%d waits for %d lost swaps", len(waits), casRounds-1)
	}
	for k, w := range waits {
		if w <= 0 || w > min(minConflictWait<<k, maxConflictWait) {
			t.Errorf("wait %d: %v, want in (0, %v]", k, w, min(minConflictWait<<k, maxConflictWait))
		}
	}
	st.n, st.lost = casRounds, 0
	_, err := c.Fail(ctx, Key{Provider: "other", Scope: "provider"}, backoff(time.Second), "a", t0)
	if !errors.Is(err, ErrContended) || errors.Is(err, ErrStore) {
		t.Fatalf("after %d lost swaps: %v, want ErrContended and not ErrStore", casRounds, err)
	}
	if strings.Contains(logs.String(), "unavailable") {
		t.Fatalf("contention logged as a store outage:\n%s", logs.String())
	}
	mustAcquire(t, c, "b", t0.Add(100*time.Millisecond), Park) // the store is still used
}

// The store call timeout follows the measured latency: a store that
// answers in 900 ms ± 300 ms under load is not declared dead after 2 s.
func TestStoreTimeoutFollowsLatency(t *testing.T) {
	now := t0
	st := &conflictStore{memStore: newMemStore(), clock: &now}
	c := New(Config{Store: st})
	c.clock = func() time.Time { return now }
	if got := c.callTimeout(); got != DefaultOpTimeout {
		t.Fatalf("timeout before any sample %v, want the floor %v", got, DefaultOpTimeout)
	}
	for i := range 40 {
		st.delay = 600*time.Millisecond + time.Duration(i%3)*300*time.Millisecond
		c.Acquire(ctx, testKey, "a", t0)
	}
	got := c.callTimeout()
	if got <= 4*time.Second || got > DefaultMaxOpTimeout {
		t.Fatalf("timeout after ~900 ms calls: %v, want well above the 2 s floor and at most %v", got, DefaultMaxOpTimeout)
	}
	for range 200 {
		st.delay = time.Millisecond
		c.Acquire(ctx, testKey, "a", t0)
	}
	if got := c.callTimeout(); got != DefaultOpTimeout {
		t.Fatalf("timeout after fast calls again: %v, want the floor", got)
	}
}

// reconnectingStore fails until up, and counts reconnects like NATS.
type reconnectingStore struct {
	*memStore
	reconnects uint64
}

func (s *reconnectingStore) Reconnects() uint64 { return s.reconnects }

// A failed store that reconnects is asked at once, not after its backoff:
// sharing resumes as soon as it answers.
func TestReconnectedStoreIsAskedAtOnce(t *testing.T) {
	st := &reconnectingStore{memStore: newMemStore()}
	c := New(Config{Store: st, StoreRetry: time.Minute})
	mustFail(t, c, backoff(time.Hour), "a", t0)
	st.setFail(errors.New("connection closed"))
	for i := range 6 { // the backoff grows to 16 s
		c.Acquire(ctx, testKey, "b", t0.Add(time.Duration(1<<i)*time.Second))
	}
	st.setFail(nil)
	at := t0.Add(40 * time.Second)
	if _, err := c.Acquire(ctx, testKey, "b", at); !errors.Is(err, ErrStore) {
		t.Fatalf("before a reconnect: %v, want skipped (ErrStore)", err)
	}
	st.reconnects++
	mustAcquire(t, c, "b", at, Park)
}
