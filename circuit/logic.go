package circuit

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"time"
)

// Action is what Acquire tells a session that wants to re-dispatch a
// failed turn.
type Action int

const (
	// Go: dispatch. The circuit is closed (or off, or the store failed).
	Go Action = iota
	// Park: do not dispatch; ask again at Decision.Until, or give up when
	// the session's own schedule ends first.
	Park
	// Probe: dispatch as the circuit's one probe, holding Decision.Lease;
	// refresh it while the turn runs, report Progress or Fail.
	Probe
)

func (a Action) String() string {
	switch a {
	case Go:
		return "go"
	case Park:
		return "park"
	case Probe:
		return "probe"
	}
	return "unknown"
}

// Wait says why a session parks, which decides whether the wait counts
// against the session's own patience (guard: the parking budget).
type Wait int

const (
	// WaitNone: not parked (Go or Probe).
	WaitNone Wait = iota
	// WaitCooldown: the circuit is cooling down until
	// Decision.Circuit.CooldownUntil; this is the wait the session's own
	// retry schedule would have spent in its backoff, so it counts.
	WaitCooldown
	// WaitProbe: the cooldown is over and another session probes (or is
	// given the first chance to): the probe's outcome decides. It counts
	// for nothing — the session would have been waiting for its own
	// attempt's answer instead.
	WaitProbe
	// WaitRelease: the circuit closed; the session leaves at its release
	// jitter. It counts for nothing.
	WaitRelease
)

func (w Wait) String() string {
	switch w {
	case WaitNone:
		return "none"
	case WaitCooldown:
		return "cooldown"
	case WaitProbe:
		return "probe"
	case WaitRelease:
		return "release"
	}
	return "unknown"
}

// Decision is Acquire's answer.
type Decision struct {
	Action Action
	// Until is when a parked session asks again (Park only).
	Until time.Time
	// Wait is why it parks (Park only).
	Wait Wait
	// Lease is the probe lease (Probe only).
	Lease Lease
	// Circuit is the circuit as the decision saw it, for the
	// ProviderError's circuit member and the logs; for WaitCooldown its
	// CooldownUntil is the end of the cooldown.
	Circuit Snapshot
}

// Failure is a classified failure as the circuit layer needs it.
type Failure struct {
	Class string // transient | hard open circuits; request, unclassified never do
	Code  string // semantic code, e.g. rate_limited
	// CooldownUntil is the validated provider hint (reset time,
	// retry-after): the circuit stays open at least until then. Zero when
	// the provider gave none.
	CooldownUntil time.Time
	// Backoff is the failing session's own policy delay before its next
	// attempt: the first step of the circuit's schedule when this failure
	// opens it (later steps double it, whoever fails). Zero: the hint's
	// distance from now, at least MinCooldown.
	Backoff time.Duration
}

// MinCooldown is the shortest cooldown step: a failure without a backoff
// or a hint still keeps the circuit open this long.
const MinCooldown = time.Second

// opensCircuit reports whether failures of class touch circuits at all.
func opensCircuit(class string) bool { return class == "transient" || class == "hard" }

// ErrLeaseLost is returned by Refresh and Release when the caller no longer
// holds the probe lease (it expired and another session took it, or the
// circuit closed or re-opened meanwhile). The probe's turn goes on; the
// caller just stops refreshing.
var ErrLeaseLost = errors.New("circuit: probe lease lost")

// params are the tunables of the transitions (see Config).
type params struct {
	leaseTTL      time.Duration
	parkPoll      time.Duration
	releaseWindow time.Duration
	maxCooldown   time.Duration
	seed          uint64
}

// leaseHeld reports whether r's lease still binds at now. A lease ending
// more than two TTLs ahead was written by a clock far ahead of ours (or by
// a hostile writer) and binds nobody: a refresh never sets it further than
// one TTL from the holder's now.
func (p params) leaseHeld(r *Record, now time.Time) bool {
	return r.leaseValid(now) && r.Lease.Until.Sub(now) <= 2*p.leaseTTL
}

// wakeSpread is the window over which the sessions parked on a cooldown
// ask again after it ends, each at its own offset (a hash of its holder
// and the probe round): the first to ask takes the probe, and the others
// find its lease instead of racing it for one compare-and-swap — which
// also makes the probe's owner a different session each round.
func (p params) wakeSpread(r *Record) time.Duration {
	return min(r.Cooldown()/4, p.parkPoll/2)
}

// round identifies one cooldown of one outage, for the wake jitter.
func round(r *Record) uint64 { return r.Epoch*0x9e3779b97f4a7c15 ^ uint64(r.Probes) }

// clone returns a deep copy of cur, or a fresh closed record for key.
func clone(cur *Record, key Key) *Record {
	if cur == nil {
		return &Record{Version: RecordVersion, Key: key}
	}
	n := *cur
	if cur.Lease != nil {
		l := *cur.Lease
		n.Lease = &l
	}
	return &n
}

// acquire decides for holder at now. It returns the record to store, or
// nil when nothing changes: only granting (or re-granting) the probe
// lease writes.
func (p params) acquire(cur *Record, key Key, holder string, now time.Time) (Decision, *Record) {
	park := func(until time.Time, w Wait) (Decision, *Record) {
		return Decision{Action: Park, Until: until, Wait: w, Circuit: cur.SnapshotAt(key, now)}, nil
	}
	if !cur.OpenAt(now) {
		if cur != nil && cur.Closed() && !cur.ClosedAt.IsZero() && now.Before(cur.ClosedAt.Add(p.releaseWindow)) {
			if r := cur.ClosedAt.Add(p.jitter(holder, cur.Epoch, p.releaseWindow)); now.Before(r) {
				return park(minTime(r, now.Add(p.releaseWindow)), WaitRelease) // a ClosedAt from the future binds no longer
			}
		}
		return Decision{Action: Go, Circuit: cur.SnapshotAt(key, now)}, nil
	}
	spread := p.wakeSpread(cur)
	if now.Before(cur.OpenUntil) {
		wake := cur.OpenUntil.Add(p.jitter(holder, round(cur), spread))
		return park(minTime(wake, now.Add(p.maxCooldown)), WaitCooldown)
	}
	if p.leaseHeld(cur, now) && cur.Lease.Holder != holder {
		// Re-ask within [poll/2, poll), spread per holder, never after the
		// lease could have expired.
		poll := p.parkPoll/2 + p.jitter(holder, cur.Epoch^0x9e3779b97f4a7c15, p.parkPoll/2)
		return park(minTime(cur.Lease.Until, now.Add(poll)), WaitProbe)
	}
	if holder == cur.LastProbe && now.Before(cur.OpenUntil.Add(spread)) {
		// The last probe was this session's: the others parked on the
		// cooldown ask within the spread; the lease is this session's only
		// if none of them wants it.
		return park(cur.OpenUntil.Add(spread), WaitProbe)
	}
	next := clone(cur, key)
	if next.Lease == nil || next.Lease.Holder != holder || !p.leaseHeld(cur, now) {
		next.Lease = &Lease{Holder: holder, GrantedAt: now.UTC()}
		next.Probes++
	}
	next.Lease.Until = now.Add(p.leaseTTL).UTC()
	next.UpdatedAt = now.UTC()
	return Decision{Action: Probe, Lease: *next.Lease, Circuit: next.SnapshotAt(key, now)}, next
}

// fail applies a transient or hard failure. It opens a circuit that is not
// open; a failed probe (the lease holder's failure) re-opens it for the
// next, doubled step of the circuit's schedule and hands the lease on; a
// failure after the cooldown with no probe running re-opens it for the
// same step. Any other failure — the common case, many sessions failing
// while the circuit is already open — changes the record only when it
// moves the cooldown meaningfully (a provider hint well past it) or turns
// a transient circuit hard: otherwise fail returns nil and nothing is
// written.
func (p params) fail(cur *Record, key Key, f Failure, holder string, now time.Time) *Record {
	hint := f.CooldownUntil
	if limit := now.Add(p.maxCooldown); hint.After(limit) {
		hint = limit
	}
	next := clone(cur, key)
	touch := func(openUntil time.Time) *Record {
		next.OpenUntil = latest(openUntil, hint).UTC()
		next.Failures++
		next.Code, next.Class = f.Code, f.Class
		next.UpdatedAt = now.UTC()
		return next
	}
	if !cur.OpenAt(now) {
		next.Epoch++
		next.OpenedAt = now.UTC()
		next.ClosedAt = time.Time{}
		next.Failures, next.Probes = 0, 0
		next.Lease, next.LastProbe = nil, ""
		next.OpenUntil = time.Time{}
		step := f.Backoff
		if step <= 0 {
			step = hint.Sub(now)
		}
		next.CooldownMs = p.step(step).Milliseconds()
		return touch(now.Add(next.Cooldown()))
	}
	held := p.leaseHeld(cur, now)
	switch {
	case cur.Lease != nil && cur.Lease.Holder == holder:
		// A failed probe (also one whose lease ran out unnoticed: nobody
		// took it over, so it was still the one probe).
		next.CooldownMs = p.step(2 * cur.Cooldown()).Milliseconds()
		next.Lease, next.LastProbe = nil, holder
		return touch(latest(cur.OpenUntil, now.Add(next.Cooldown())))
	case !now.Before(cur.OpenUntil) && !held:
		// The cooldown is over and nobody probes: this failure is the probe's
		// answer, without a probe. Same step again.
		next.Lease = nil
		next.CooldownMs = p.step(cur.Cooldown()).Milliseconds()
		return touch(now.Add(next.Cooldown()))
	}
	moves := hint.Sub(cur.OpenUntil) >= max(time.Second, cur.Cooldown()/10)
	harder := f.Class == "hard" && cur.Class != "hard"
	if !moves && !harder {
		return nil
	}
	return touch(cur.OpenUntil)
}

// step bounds one cooldown step to [MinCooldown, maxCooldown].
func (p params) step(d time.Duration) time.Duration {
	return min(max(d, MinCooldown), p.maxCooldown)
}

// progress closes an open circuit: provider progress anywhere on the key is
// proof the outage is over. nil when already closed (or stale: nobody
// waits on it).
func (p params) progress(cur *Record, key Key, now time.Time) *Record {
	if !cur.OpenAt(now) {
		return nil
	}
	next := clone(cur, key)
	next.OpenUntil = time.Time{}
	next.ClosedAt = now.UTC()
	next.Lease, next.LastProbe = nil, ""
	next.Epoch++
	next.UpdatedAt = now.UTC()
	return next
}

// refresh extends holder's lease by the lease TTL from now. A lease that
// ran out but that nobody took over is still the holder's: its probe is
// still running, and handing the lease to another session now would make
// two probes.
func (p params) refresh(cur *Record, key Key, holder string, now time.Time) (*Record, error) {
	if cur.Closed() || cur.Lease == nil || cur.Lease.Holder != holder {
		return nil, ErrLeaseLost
	}
	next := clone(cur, key)
	next.Lease.Until = now.Add(p.leaseTTL).UTC()
	next.UpdatedAt = now.UTC()
	return next, nil
}

// release drops holder's lease without deciding the outage (the probe was
// cancelled or stopped before an outcome), so the next session can probe.
func (p params) release(cur *Record, key Key, holder string, now time.Time) (*Record, error) {
	if cur.Closed() || cur.Lease == nil || cur.Lease.Holder != holder {
		return nil, ErrLeaseLost
	}
	next := clone(cur, key)
	next.Lease = nil
	next.UpdatedAt = now.UTC()
	return next, nil
}

// jitter is a deterministic offset in [0, window) for holder in epoch:
// stable across repeated questions (a parked session asking twice gets the
// same release time) and across processes (no shared random source is
// needed), yet spread by the holder id and the seed.
func (p params) jitter(holder string, epoch uint64, window time.Duration) time.Duration {
	if window <= 0 {
		return 0
	}
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], p.seed)
	binary.LittleEndian.PutUint64(b[8:], epoch)
	h.Write(b[:])
	h.Write([]byte(holder))
	return time.Duration(mix64(h.Sum64()) % uint64(window))
}

// mix64 is the splitmix64 finalizer: it spreads FNV's low-entropy high
// bits over the whole word before the modulo.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
