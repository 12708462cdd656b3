package circuit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/kvstore"
)

var (
	t0      = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	testKey = Key{Provider: "cursor-acp", Model: "gpt-5", Scope: "provider"}
	ctx     = context.Background()
)

// transient is a failure with a provider hint (the cooldown's step is the
// hint's distance from now when it opens the circuit).
func transient(until time.Time) Failure {
	return Failure{Class: "transient", Code: "provider_overloaded", CooldownUntil: until}
}

// backoff is a failure without a hint whose session would wait d.
func backoff(d time.Duration) Failure {
	return Failure{Class: "transient", Code: "provider_overloaded", Backoff: d}
}

func newTest(t *testing.T, st Store) *Circuits {
	t.Helper()
	return New(Config{Store: st, Seed: 1, LeaseTTL: 30 * time.Second, ParkPoll: 2 * time.Second,
		ReleaseWindow: 3 * time.Second,
		OpTimeout:     2 * time.Minute}) // a hang guard: a loaded machine must not turn contention into "store failed"
}

func mustAcquire(t *testing.T, c *Circuits, holder string, now time.Time, want Action) Decision {
	t.Helper()
	d, err := c.Acquire(ctx, testKey, holder, now)
	if err != nil {
		t.Fatalf("Acquire(%s, %v): %v", holder, now.Sub(t0), err)
	}
	if d.Action != want {
		t.Fatalf("Acquire(%s, +%v) = %v (%+v), want %v", holder, now.Sub(t0), d.Action, d, want)
	}
	return d
}

func mustFail(t *testing.T, c *Circuits, f Failure, holder string, now time.Time) Snapshot {
	t.Helper()
	s, err := c.Fail(ctx, testKey, f, holder, now)
	if err != nil {
		t.Fatalf("Fail: %v", err)
	}
	return s
}

func TestRequestAndUnclassifiedNeverTouchCircuits(t *testing.T) {
	st := newMemStore()
	c := newTest(t, st)
	for _, class := range []string{"request", "unclassified", ""} {
		s, err := c.Fail(ctx, testKey, Failure{Class: class, Code: "x", CooldownUntil: t0.Add(time.Hour)}, "a", t0)
		if err != nil || s != (Snapshot{}) {
			t.Fatalf("Fail(%q) = %+v, %v; want zero, nil", class, s, err)
		}
	}
	if calls, _ := st.counts(); calls != 0 {
		t.Fatalf("store calls = %d, want 0", calls)
	}
	mustAcquire(t, c, "b", t0.Add(time.Second), Go)
}

func TestOpenParkProbeClose(t *testing.T) {
	c := newTest(t, newMemStore())
	cool := t0.Add(10 * time.Second)
	s := mustFail(t, c, transient(cool), "a", t0)
	if s.State != StateOpen || !s.CooldownUntil.Equal(cool) {
		t.Fatalf("after Fail: %+v, want open until %v", s, cool)
	}
	d := mustAcquire(t, c, "b", t0.Add(time.Second), Park)
	if d.Wait != WaitCooldown || d.Until.Before(cool) || !d.Until.Before(cool.Add(time.Second)) {
		t.Fatalf("park %v until +%v, want a cooldown wait until within [cooldown end, +1s) (the wake spread)", d.Wait, d.Until.Sub(cool))
	}
	// The first session to ask after the cooldown probes; asking again is idempotent.
	p := mustAcquire(t, c, "b", cool, Probe)
	if p.Lease.Holder != "b" || !p.Lease.Until.Equal(cool.Add(30*time.Second)) || p.Circuit.State != StateProbing {
		t.Fatalf("probe decision %+v", p)
	}
	mustAcquire(t, c, "b", cool.Add(time.Second), Probe)
	// Others park, re-asking within the poll interval and never past the lease.
	w := mustAcquire(t, c, "c", cool.Add(2*time.Second), Park)
	if w.Wait != WaitProbe || w.Until.Before(cool.Add(3*time.Second)) || !w.Until.Before(cool.Add(4*time.Second)) {
		t.Fatalf("parked until +%v after cooldown, want in [1s, 2s) from the question", w.Until.Sub(cool))
	}
	l, err := c.Refresh(ctx, testKey, "b", cool.Add(20*time.Second))
	if err != nil || !l.Until.Equal(cool.Add(50*time.Second)) {
		t.Fatalf("Refresh = %+v, %v", l, err)
	}
	// Past the original lease TTL the refreshed lease still holds.
	mustAcquire(t, c, "c", cool.Add(35*time.Second), Park)
	closedAt := cool.Add(40 * time.Second)
	if s, err := c.Progress(ctx, testKey, closedAt); err != nil || s.State != StateClosed || s.CooldownUntil != nil {
		t.Fatalf("Progress = %+v, %v", s, err)
	}
	// Released with a stable per-holder jitter inside the window.
	r1, _ := c.Acquire(ctx, testKey, "c", closedAt)
	if r1.Action == Park {
		if r1.Wait != WaitRelease {
			t.Fatalf("release park: wait %v", r1.Wait)
		}
		if r1.Until.Before(closedAt) || !r1.Until.Before(closedAt.Add(3*time.Second)) {
			t.Fatalf("release at +%v, want within the 3s window", r1.Until.Sub(closedAt))
		}
		r2 := mustAcquire(t, c, "c", closedAt.Add(time.Millisecond), Park)
		if !r2.Until.Equal(r1.Until) {
			t.Fatalf("release time moved: %v then %v", r1.Until, r2.Until)
		}
		mustAcquire(t, c, "c", r1.Until, Go)
	}
	mustAcquire(t, c, "d", closedAt.Add(3*time.Second), Go)
}

func TestProbeFailureReopensAndHandsLeaseOn(t *testing.T) {
	c := newTest(t, newMemStore())
	mustFail(t, c, transient(t0.Add(5*time.Second)), "a", t0)
	mustAcquire(t, c, "a", t0.Add(5*time.Second), Probe)
	next := t0.Add(16 * time.Second) // the failure + twice the 5 s step
	s := mustFail(t, c, backoff(time.Second), "a", t0.Add(6*time.Second))
	if s.State != StateOpen || !s.CooldownUntil.Equal(next) {
		t.Fatalf("after failed probe: %+v, want open until %v", s, next)
	}
	mustAcquire(t, c, "b", t0.Add(7*time.Second), Park)
	mustAcquire(t, c, "b", next, Probe)
	if _, err := c.Refresh(ctx, testKey, "a", next); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("old holder Refresh: %v, want ErrLeaseLost", err)
	}
	rec, _, _ := c.Get(ctx, testKey, next)
	if rec.Failures != 2 || rec.Probes != 2 || rec.Lease.Holder != "b" {
		t.Fatalf("record %+v: want 2 failures and 2 probes in this outage, b holding", rec)
	}
}

func TestLeaseExpiryLetsAnotherSessionTakeOver(t *testing.T) {
	c := newTest(t, newMemStore())
	mustFail(t, c, backoff(time.Second), "a", t0.Add(-time.Second))
	p := mustAcquire(t, c, "a", t0, Probe)
	mustAcquire(t, c, "b", p.Lease.Until.Add(-time.Nanosecond), Park)
	q := mustAcquire(t, c, "b", p.Lease.Until, Probe) // a crashed: its lease ran out
	if q.Lease.Holder != "b" {
		t.Fatalf("takeover lease %+v", q.Lease)
	}
	if _, err := c.Refresh(ctx, testKey, "a", p.Lease.Until); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("stale Refresh: %v, want ErrLeaseLost", err)
	}
	if err := c.Release(ctx, testKey, "a", p.Lease.Until); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("stale Release: %v, want ErrLeaseLost", err)
	}
	// A Fail from the old holder while b probes changes nothing: b's
	// probe will tell.
	_, puts := st(c).counts()
	mustFail(t, c, backoff(time.Second), "a", p.Lease.Until)
	if _, again := st(c).counts(); again != puts {
		t.Fatalf("a failure during another's probe wrote the record")
	}
	mustAcquire(t, c, "b", p.Lease.Until.Add(time.Second), Probe)
}

func TestReleaseLetsTheNextSessionProbeAtOnce(t *testing.T) {
	c := newTest(t, newMemStore())
	mustFail(t, c, backoff(time.Second), "a", t0.Add(-time.Second))
	mustAcquire(t, c, "a", t0, Probe)
	mustAcquire(t, c, "b", t0, Park)
	if err := c.Release(ctx, testKey, "a", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, c, "b", t0.Add(time.Second), Probe)
}

func TestFailExtendsNeverShortensAndIsCapped(t *testing.T) {
	c := New(Config{Store: newMemStore(), MaxCooldown: time.Hour})
	for _, tt := range []struct {
		until, want time.Time
	}{
		{t0.Add(time.Minute), t0.Add(time.Minute)},
		{t0.Add(30 * time.Second), t0.Add(time.Minute)}, // shorter: kept
		{t0.Add(2 * time.Minute), t0.Add(2 * time.Minute)},
		{t0.Add(48 * time.Hour), t0.Add(time.Hour)}, // capped
	} {
		s := mustFail(t, c, transient(tt.until), "a", t0)
		if !s.CooldownUntil.Equal(tt.want) {
			t.Fatalf("Fail until +%v: cooldown +%v, want +%v", tt.until.Sub(t0), s.CooldownUntil.Sub(t0), tt.want.Sub(t0))
		}
	}
	// A cooldown in the past opens the circuit for the least step.
	k := Key{Provider: "p", Scope: "provider"}
	s, _ := c.Fail(ctx, k, transient(t0.Add(-time.Hour)), "a", t0)
	if !s.CooldownUntil.Equal(t0.Add(MinCooldown)) {
		t.Fatalf("past cooldown: %+v", s)
	}
	if d, _ := c.Acquire(ctx, k, "b", t0.Add(MinCooldown)); d.Action != Probe {
		t.Fatalf("after past cooldown: %v, want probe", d.Action)
	}
}

func TestHardFailureOpensToo(t *testing.T) {
	c := newTest(t, newMemStore())
	mustFail(t, c, Failure{Class: "hard", Code: "quota_limited", CooldownUntil: t0.Add(time.Hour)}, "a", t0)
	mustAcquire(t, c, "b", t0.Add(time.Minute), Park)
}

func TestProgressFromAnySessionCloses(t *testing.T) {
	c := newTest(t, newMemStore())
	mustFail(t, c, transient(t0.Add(time.Minute)), "a", t0)
	// A new prompt (never blocked) made progress while the circuit was open.
	if s, err := c.Progress(ctx, testKey, t0.Add(time.Second)); err != nil || s.State != StateClosed {
		t.Fatalf("Progress = %+v, %v", s, err)
	}
	mustAcquire(t, c, "b", t0.Add(time.Hour), Go)
	// Progress on a closed circuit writes nothing.
	st := newMemStore()
	c2 := newTest(t, st)
	c2.Progress(ctx, testKey, t0)
	if _, puts := st.counts(); puts != 0 {
		t.Fatalf("Progress on a closed circuit wrote %d times", puts)
	}
}

func TestStoreFailureProceedsAndIsLoggedOnce(t *testing.T) {
	st := newMemStore()
	var logs bytes.Buffer
	c := New(Config{Store: st, StoreRetry: 30 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c.sleep = func(context.Context, time.Duration) {}
	mustFail(t, c, transient(t0.Add(time.Hour)), "a", t0)
	st.setFail(errors.New("disk on fire"))
	// The decision is the process's last view's (the circuit it saw open
	// an hour long: park on its cooldown), at once, with ErrStore; a view
	// older than LeaseTTL (30 s) is no guide: Go, as without circuits.
	d, err := c.Acquire(ctx, testKey, "b", t0.Add(time.Second))
	if !errors.Is(err, ErrStore) || d.Action != Park || d.Wait != WaitCooldown || d.Circuit.State != StateOpen {
		t.Fatalf("Acquire on a failing store = %+v, %v; want park on the last view and ErrStore", d, err)
	}
	// The store is left alone for 0.5 s, then asked again with a doubling
	// pause (1 s, 2 s, … capped at StoreRetry, 30 s here), each pause
	// drawn in [half its step, its step].
	var asked []time.Duration
	for ms := 1100; ms <= 62500; ms += 100 {
		at := t0.Add(time.Duration(ms) * time.Millisecond)
		before, _ := st.counts()
		d, err = c.Acquire(ctx, testKey, "b", at)
		want := Go
		if at.Sub(t0) <= DefaultLeaseTTL {
			want = Park
		}
		if !errors.Is(err, ErrStore) || d.Action != want {
			t.Fatalf("Acquire while the store is down at +%v = %+v, %v; want %v", at.Sub(t0), d, err, want)
		}
		if after, _ := st.counts(); after != before {
			asked = append(asked, at.Sub(t0))
		}
	}
	// Asked at 100 ms steps: each ask within [step/2, step + 100 ms] of
	// the failure before it (the first at +1 s).
	prev, step := time.Second, 500*time.Millisecond
	for _, at := range asked {
		if gap := at - prev; gap < step/2 || gap > step+100*time.Millisecond {
			t.Fatalf("store asked again at %v: %v after the failure before, want a pause in [%v, %v] (a doubling step from 0.5 s, capped at 30 s)",
				asked, gap, step/2, step)
		}
		prev, step = at, min(2*step, 30*time.Second)
	}
	if len(asked) < 7 || prev < 62500*time.Millisecond-step-100*time.Millisecond {
		t.Fatalf("store asked again at %v: too seldom (the last pause ends by +62.5 s)", asked)
	}
	if _, err := c.Fail(ctx, testKey, transient(t0.Add(time.Hour)), "b", t0.Add(62600*time.Millisecond)); !errors.Is(err, ErrStore) {
		t.Fatalf("Fail on a failing store: %v", err)
	}
	if n := strings.Count(logs.String(), "circuit store unavailable"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, logs.String())
	}
	st.setFail(nil)
	mustAcquire(t, c, "b", t0.Add(93*time.Second), Park) // the store answers again: still open
	if !strings.Contains(logs.String(), "circuit store recovered") {
		t.Fatalf("recovery not logged:\n%s", logs.String())
	}
}

// A store between leaders (an error wrapping kvstore.ErrUnsettled:
// nothing stored, a leader in a moment) is asked again at the very next
// operation, not left alone; the operation itself still decides locally,
// and the outage is logged once, its end as a recovery.
func TestUnsettledStoreIsAskedAgainAtOnce(t *testing.T) {
	st := newMemStore()
	var logs bytes.Buffer
	c := New(Config{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c.sleep = func(context.Context, time.Duration) {}
	mustFail(t, c, transient(t0.Add(time.Hour)), "a", t0)
	st.setFail(fmt.Errorf("nats get: %w: no responders", kvstore.ErrUnsettled))
	for i := range 3 {
		at := t0.Add(time.Second + time.Duration(i)*time.Millisecond)
		before, _ := st.counts()
		d, err := c.Acquire(ctx, testKey, "b", at)
		if !errors.Is(err, ErrStore) || d.Action != Park {
			t.Fatalf("Acquire %d between leaders: %+v, %v; want Park on the last view with ErrStore", i, d, err)
		}
		if after, _ := st.counts(); after == before {
			t.Fatalf("Acquire %d (+%v) did not ask the store: an unsettled store was left alone", i, at.Sub(t0))
		}
	}
	st.setFail(nil)
	mustAcquire(t, c, "b", t0.Add(time.Second+5*time.Millisecond), Park)
	if n := strings.Count(logs.String(), "circuit store unavailable"); n != 1 || !strings.Contains(logs.String(), "circuit store recovered") {
		t.Fatalf("want the outage logged once and its end:\n%s", logs.String())
	}
}

func TestForeignRecordVersionIsNeitherReadNorOverwritten(t *testing.T) {
	st := newMemStore()
	k, _ := testKey.Normalize()
	foreign := []byte(`{"v":2,"key":{"namespace":"default","provider":"cursor-acp","scope":"provider"}}`)
	if err := st.kv.CompareAndSwap(ctx, k.ID(), foreign, 0); err != nil {
		t.Fatal(err)
	}
	c := newTest(t, st)
	d, err := c.Acquire(ctx, testKey, "a", t0)
	if !errors.Is(err, ErrFormat) || !errors.Is(err, ErrStore) || d.Action != Go {
		t.Fatalf("Acquire = %+v, %v; want go with ErrFormat", d, err)
	}
	if b, rev, _ := st.kv.Get(ctx, k.ID()); rev != 1 || string(b) != string(foreign) {
		t.Fatalf("foreign record overwritten: rev %d, %s", rev, b)
	}
}

func TestOffAlwaysGoes(t *testing.T) {
	c := New(Config{})
	if c.Enabled() {
		t.Fatal("Enabled with no store")
	}
	if _, err := c.Fail(ctx, testKey, transient(t0.Add(time.Hour)), "a", t0); err != nil {
		t.Fatal(err)
	}
	if d := mustAcquire(t, c, "b", t0.Add(time.Second), Go); d.Circuit.State != StateClosed {
		t.Fatalf("off: circuit %+v, want closed", d.Circuit)
	}
}

func TestKeyNormalizeAndID(t *testing.T) {
	k, err := Key{Provider: "codex-acp", Scope: "model", Model: "o3"}.Normalize()
	if err != nil || k.Namespace != DefaultNamespace {
		t.Fatalf("Normalize = %+v, %v", k, err)
	}
	if got := k.String(); got != "default/codex-acp/o3/model" {
		t.Fatalf("String = %q", got)
	}
	id := k.ID()
	if !strings.HasPrefix(id, "ns.default.") || len(id) != len("ns.default.")+32 {
		t.Fatalf("ID = %q", id)
	}
	for _, other := range []Key{
		{Namespace: "team-b", Provider: "codex-acp", Scope: "model", Model: "o3"},
		{Provider: "codex-acp", Scope: "model", Model: "o4"},
		{Provider: "codex-acp", Scope: "provider", Model: "o3"},
		{Provider: "codex-acp", Scope: "model"},
	} {
		o, _ := other.Normalize()
		if o.ID() == id {
			t.Fatalf("%v and %v share id %s", k, o, id)
		}
	}
	for _, bad := range []Key{
		{Namespace: "a.b", Provider: "p", Scope: "provider"},
		{Namespace: "a>", Provider: "p", Scope: "provider"},
		{Namespace: strings.Repeat("n", 65), Provider: "p", Scope: "provider"},
		{Scope: "provider"},
		{Provider: "p"},
		{Provider: "p\n", Scope: "provider"},
		{Provider: "p", Model: strings.Repeat("m", 257), Scope: "provider"},
	} {
		if _, err := bad.Normalize(); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Normalize(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
	c := newTest(t, newMemStore())
	if d, err := c.Acquire(ctx, testKey, "", t0); err == nil || d.Action != Go {
		t.Fatalf("empty holder: %+v, %v", d, err)
	}
}

func TestSnapshotJSONIsTheProviderErrorMember(t *testing.T) {
	c := newTest(t, newMemStore())
	s := mustFail(t, c, transient(t0.Add(90*time.Second)), "a", t0)
	b, _ := json.Marshal(s)
	want := `{"key":"default/cursor-acp/gpt-5/provider","state":"open","cooldownUntil":"2026-03-01T12:01:30Z"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	s, _ = c.Progress(ctx, testKey, t0)
	b, _ = json.Marshal(s)
	if want := `{"key":"default/cursor-acp/gpt-5/provider","state":"closed","cooldownUntil":null}`; string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestJitterIsStableAndSpread(t *testing.T) {
	p := params{seed: 42}
	const window = 3 * time.Second
	if p.jitter("h", 1, window) != p.jitter("h", 1, window) {
		t.Fatal("jitter not deterministic")
	}
	if p.jitter("h", 1, window) == p.jitter("h", 2, window) && p.jitter("g", 1, window) == p.jitter("g", 2, window) {
		t.Fatal("jitter ignores the epoch")
	}
	var buckets [10]int
	for i := range 1000 {
		j := p.jitter("host/1/sess-"+string(rune('a'+i%26))+strings.Repeat("x", i/26), 3, window)
		if j < 0 || j >= window {
			t.Fatalf("jitter %v outside [0, %v)", j, window)
		}
		buckets[j*10/window]++
	}
	for i, n := range buckets {
		if n < 50 || n > 150 { // 100 expected per tenth
			t.Fatalf("bucket %d holds %d of 1000: %v", i, n, buckets)
		}
	}
}

func TestLeaseFromAFarFutureClockBindsNobody(t *testing.T) {
	st := newMemStore()
	c := newTest(t, st)
	mustFail(t, c, backoff(time.Second), "a", t0.Add(-time.Second))
	k, _ := testKey.Normalize()
	setLease := func(l Lease) { // as another machine's write
		t.Helper()
		r, rev, err := st.Get(ctx, k.ID())
		if err != nil {
			t.Fatal(err)
		}
		r.Lease = &l
		if err := st.CompareAndSwap(ctx, k.ID(), *r, rev); err != nil {
			t.Fatal(err)
		}
	}
	setLease(Lease{Holder: "skewed", Until: t0.Add(time.Hour), GrantedAt: t0.Add(time.Hour - 30*time.Second)})
	if d := mustAcquire(t, c, "b", t0.Add(time.Second), Probe); d.Lease.Holder != "b" {
		t.Fatalf("lease %+v", d.Lease)
	}
	// A lease within two TTLs (a clock a little ahead) still binds.
	setLease(Lease{Holder: "ahead", Until: t0.Add(50 * time.Second)})
	mustAcquire(t, c, "b", t0.Add(time.Second), Park)
}

func TestRefreshKeepsAnExpiredLeaseNobodyTook(t *testing.T) {
	c := newTest(t, newMemStore())
	mustFail(t, c, backoff(time.Second), "a", t0.Add(-time.Second))
	p := mustAcquire(t, c, "a", t0, Probe)
	late := p.Lease.Until.Add(5 * time.Second) // the probe's process was slow to refresh
	l, err := c.Refresh(ctx, testKey, "a", late)
	if err != nil || !l.Until.Equal(late.Add(30*time.Second)) {
		t.Fatalf("late Refresh = %+v, %v; want the lease kept", l, err)
	}
	mustAcquire(t, c, "b", late.Add(time.Second), Park)
}

func TestHostileTimesCannotParkPastTheirBounds(t *testing.T) {
	st := newMemStore()
	c := New(Config{Store: st, ReleaseWindow: 3 * time.Second, MaxCooldown: time.Hour})
	k, _ := testKey.Normalize()
	far := t0.AddDate(100, 0, 0)
	for _, tt := range []struct {
		name  string
		rec   Record
		limit time.Duration
	}{
		{"closedAt in the future", Record{Version: 1, Key: k, ClosedAt: far, Epoch: 2}, 3 * time.Second},
		{"openUntil a century away", Record{Version: 1, Key: k, OpenUntil: far, Epoch: 1}, time.Hour},
	} {
		st.force(t, k.ID(), tt.rec)
		d, err := c.Acquire(ctx, testKey, "b", t0)
		if err != nil || d.Action != Park || d.Until.Sub(t0) > tt.limit {
			t.Errorf("%s: %+v, %v; want parked at most %v", tt.name, d, err, tt.limit)
		}
	}
}

func TestAForeignRecordDoesNotTakeTheStoreDown(t *testing.T) {
	st := newMemStore()
	c := newTest(t, st)
	foreign := Key{Provider: "foreign", Scope: "provider"}
	fk, _ := foreign.Normalize()
	st.force(t, fk.ID(), Record{Version: 9})
	if _, err := c.Acquire(ctx, foreign, "a", t0); !errors.Is(err, ErrFormat) {
		t.Fatalf("foreign record: %v", err)
	}
	mustFail(t, c, transient(t0.Add(time.Minute)), "a", t0)
	mustAcquire(t, c, "b", t0.Add(time.Second), Park)
}

// st returns the memStore behind c.
func st(c *Circuits) *memStore { return c.store.(*memStore) }
