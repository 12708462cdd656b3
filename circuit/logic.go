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

// Decision is Acquire's answer.
type Decision struct {
	Action Action
	// Until is when a parked session asks again (Park only).
	Until time.Time
	// Lease is the probe lease (Probe only).
	Lease Lease
	// Circuit is the circuit as the decision saw it, for the
	// ProviderError's circuit member and the logs.
	Circuit Snapshot
}

// Failure is a classified failure as the circuit layer needs it.
type Failure struct {
	Class string // transient | hard open circuits; request, unclassified never do
	Code  string // semantic code, e.g. rate_limited
	// CooldownUntil is when the circuit may be probed again: the validated
	// provider hint (reset time, retry-after), else the failing session's
	// next policy delay from now.
	CooldownUntil time.Time
}

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
// nil when nothing changes.
func (p params) acquire(cur *Record, key Key, holder string, now time.Time) (Decision, *Record) {
	park := func(until time.Time) (Decision, *Record) {
		return Decision{Action: Park, Until: until, Circuit: cur.SnapshotAt(key, now)}, nil
	}
	if cur.Closed() {
		if cur != nil && !cur.ClosedAt.IsZero() && now.Before(cur.ClosedAt.Add(p.releaseWindow)) {
			if r := cur.ClosedAt.Add(p.jitter(holder, cur.Epoch, p.releaseWindow)); now.Before(r) {
				return park(minTime(r, now.Add(p.releaseWindow))) // a ClosedAt from the future binds no longer
			}
		}
		return Decision{Action: Go, Circuit: cur.SnapshotAt(key, now)}, nil
	}
	if now.Before(cur.OpenUntil) {
		return park(minTime(cur.OpenUntil, now.Add(p.maxCooldown)))
	}
	if p.leaseHeld(cur, now) && cur.Lease.Holder != holder {
		// Re-ask within [poll/2, poll), spread per holder, never after the
		// lease could have expired.
		poll := p.parkPoll/2 + p.jitter(holder, cur.Epoch^0x9e3779b97f4a7c15, p.parkPoll/2)
		return park(minTime(cur.Lease.Until, now.Add(poll)))
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

// fail opens the circuit or extends it, and hands the lease on when the
// failing session held it (a failed probe). Never nil.
func (p params) fail(cur *Record, key Key, f Failure, holder string, now time.Time) *Record {
	until := f.CooldownUntil
	if until.Before(now) {
		until = now
	}
	if limit := now.Add(p.maxCooldown); until.After(limit) {
		until = limit
	}
	next := clone(cur, key)
	if next.Closed() {
		next.Epoch++
		next.OpenedAt = now.UTC()
		next.ClosedAt = time.Time{}
		next.Failures, next.Probes = 0, 0
		next.Lease = nil
	}
	if until.After(next.OpenUntil) {
		next.OpenUntil = until.UTC()
	}
	next.Failures++
	next.Code, next.Class = f.Code, f.Class
	if next.Lease != nil && (next.Lease.Holder == holder || !p.leaseHeld(next, now)) {
		next.Lease = nil
	}
	next.UpdatedAt = now.UTC()
	return next
}

// progress closes an open circuit: provider progress anywhere on the key is
// proof the outage is over. nil when already closed.
func (p params) progress(cur *Record, key Key, now time.Time) *Record {
	if cur.Closed() {
		return nil
	}
	next := clone(cur, key)
	next.OpenUntil = time.Time{}
	next.ClosedAt = now.UTC()
	next.Lease = nil
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
