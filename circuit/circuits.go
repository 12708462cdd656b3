package circuit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// Defaults of Config's zero fields.
const (
	DefaultLeaseTTL      = 30 * time.Second
	DefaultParkPoll      = 2 * time.Second
	DefaultReleaseWindow = 3 * time.Second
	DefaultMaxCooldown   = 24 * time.Hour
	DefaultOpTimeout     = 2 * time.Second
	DefaultMaxOpTimeout  = 30 * time.Second
	DefaultStoreRetry    = 2 * time.Second
)

// maxHolder bounds a lease holder id.
const maxHolder = 256

// casRounds bounds the read-decide-swap rounds of one operation. Racers on
// one key need two rounds (the first swap wins; the others re-read, find
// the change already made or park, and write nothing), so running out
// means a store under heavy churn.
const casRounds = 16

// Contention backoff: after the k-th lost swap an operation waits a random
// time in [0, min(base·2^k, maxConflictWait)), base the measured store
// latency (at least minConflictWait), before it re-reads.
const (
	minConflictWait = time.Millisecond
	maxConflictWait = 250 * time.Millisecond
)

// firstStoreRetry is how soon a failed store is asked again; each further
// failure doubles it up to Config.StoreRetry.
const firstStoreRetry = 500 * time.Millisecond

// ErrContended is returned (not wrapping ErrStore) when an operation lost
// casRounds compare-and-swap races in a row.
var ErrContended = errors.New("circuit: too many concurrent updates")

// Config configures Circuits. Zero durations take the defaults above.
type Config struct {
	// Store holds the circuits; nil turns circuits off (Acquire always
	// says Go, nothing is stored).
	Store Store
	// LeaseTTL is how long a probe lease lasts unless refreshed; the probe
	// refreshes it every LeaseTTL/3 while its turn runs.
	LeaseTTL time.Duration
	// ParkPoll is how often a parked session re-asks while a probe runs
	// (each session in [ParkPoll/2, ParkPoll), spread by its holder id).
	ParkPoll time.Duration
	// ReleaseWindow spreads the parked sessions' dispatch after a circuit
	// closes.
	ReleaseWindow time.Duration
	// MaxCooldown caps how long one failure keeps a circuit open.
	MaxCooldown time.Duration
	// Seed perturbs the release jitter; tests pin it, production may use
	// any value (the holder ids already differ).
	Seed uint64
	// OpTimeout is the least time one store call (a read, a swap) may
	// take before the store counts as failed. The actual timeout follows
	// the measured latency (4 × (smoothed + 4 × deviation), as TCP
	// computes its retransmission timeout), so a store slowed by load is
	// not taken for a dead one; MaxOpTimeout caps it. On a Pinger the
	// timeout pings the store instead of failing the call: a store that
	// answers the ping is waited for, up to four timeouts and at most
	// MaxOpTimeout (slowcall.go).
	OpTimeout    time.Duration
	MaxOpTimeout time.Duration
	// StoreRetry caps how long a failed store is left alone: it is asked
	// again after a pause of 0.5 s, then twice as long at each further
	// failure, up to StoreRetry (each pause drawn in [half, whole], so
	// that processes that lost the store together come back spread);
	// operations in between answer at once as if circuits were off. A
	// store that reconnects (NATS) is asked at once, and so is one whose
	// error says it is between leaders and stored nothing
	// (kvstore.ErrUnsettled). The first answer resumes sharing.
	StoreRetry time.Duration
	// Logger receives "circuit store unavailable" once per store outage
	// and "circuit store recovered"; nil discards.
	Logger *slog.Logger
}

// Circuits is the circuit layer: the transitions of doc.go over a Store.
// Safe for concurrent use. It starts no goroutines.
type Circuits struct {
	store        Store
	p            params
	opTimeout    time.Duration
	maxOpTimeout time.Duration
	log          *slog.Logger
	// clock measures store latency and sleep waits out contention; they
	// are never part of a decision (every operation takes its now).
	clock func() time.Time
	sleep func(context.Context, time.Duration)
	// after arms a timer (time.NewTimer's channel and Stop; tests drive
	// it): the deadline after which a late call's store is pinged.
	after func(time.Duration) (<-chan time.Time, func() bool)

	health *kvstore.Health // a failed store is left alone for a while (asked again at once after a reconnect)

	mu         sync.Mutex
	srtt, rttv time.Duration      // smoothed store call latency and its deviation (0: no sample yet)
	slow       bool               // a call was waited for past its timeout and nothing answered since
	views      map[string]view    // the last record the store answered with, per key id
	doubts     map[string][]doubt // swaps that failed with a store error and may land late (doubt.go)
}

// view is a record as the store last answered (nil: none there) and the
// operation's now when it did.
type view struct {
	rec *Record
	at  time.Time
}

// maxViews bounds the views one process keeps (a process has a handful
// of circuits; beyond that, the oldest is forgotten).
const maxViews = 1024

// New returns the circuit layer over cfg.Store.
func New(cfg Config) *Circuits {
	or := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Circuits{
		store: cfg.Store,
		p: params{
			leaseTTL:      or(cfg.LeaseTTL, DefaultLeaseTTL),
			parkPoll:      or(cfg.ParkPoll, DefaultParkPoll),
			releaseWindow: or(cfg.ReleaseWindow, DefaultReleaseWindow),
			maxCooldown:   or(cfg.MaxCooldown, DefaultMaxCooldown),
			seed:          cfg.Seed,
		},
		opTimeout:    or(cfg.OpTimeout, DefaultOpTimeout),
		maxOpTimeout: max(or(cfg.MaxOpTimeout, DefaultMaxOpTimeout), or(cfg.OpTimeout, DefaultOpTimeout)),
		health:       kvstore.NewHealth(cfg.Store, firstStoreRetry, or(cfg.StoreRetry, DefaultStoreRetry)),
		log:          log,
		clock:        time.Now,
		sleep:        sleepCtx,
		after: func(d time.Duration) (<-chan time.Time, func() bool) {
			t := time.NewTimer(d)
			return t.C, t.Stop
		},
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Enabled reports whether a store is configured.
func (c *Circuits) Enabled() bool { return c.store != nil }

// RefreshEvery is how often a probe should Refresh its lease.
func (c *Circuits) RefreshEvery() time.Duration { return c.p.leaseTTL / 3 }

// Acquire asks, for a session about to re-dispatch a failed turn on key,
// whether it may. holder identifies the session's turn (unique across
// processes and machines, e.g. host/pid/session/request). On a store
// failure the error wraps ErrStore and the decision is taken on this
// process's last view of the circuit (local: never a probe). After casRounds
// lost races in a row (a store in heavy churn) it is Park for about one
// ParkPoll with ErrContended: waiting a poll is safer than a stampede, and
// the caller's own schedule still bounds it.
func (c *Circuits) Acquire(ctx context.Context, key Key, holder string, now time.Time) (Decision, error) {
	key, err := checkArgs(key, holder)
	if err != nil || c.store == nil {
		return Decision{Action: Go, Circuit: (*Record)(nil).SnapshotAt(key, now)}, err
	}
	var d Decision
	_, err = c.update(ctx, "acquire", key, now, func(cur *Record) (*Record, error) {
		var next *Record
		d, next = c.p.acquire(cur, key, holder, now)
		return next, nil
	})
	switch {
	case errors.Is(err, ErrContended):
		until := now.Add(c.p.parkPoll/2 + c.p.jitter(holder, 0, c.p.parkPoll/2))
		return Decision{Action: Park, Until: until, Wait: WaitProbe, Circuit: d.Circuit}, err
	case err != nil:
		return c.local(key, holder, now), err
	}
	return d, nil
}

// local is Acquire's decision when the store cannot answer (unreachable,
// read-only without a quorum, between leaders): taken on this process's
// last view of the circuit, never waiting for the store. No view, a
// closed one, or one older than LeaseTTL (by the operations' clock): Go,
// as without circuits. An open one: park as that view says — on its
// cooldown, or behind its probe — and where it would grant this session
// the probe lease, which only the store can grant, park one poll instead
// and ask again: a session cut off from the others neither probes for
// them nor stampedes with the rest of its host, and sharing resumes with
// the store's first answer. The view ages out after LeaseTTL, so a store
// that stays away leaves every session to its own schedule.
func (c *Circuits) local(key Key, holder string, now time.Time) Decision {
	c.mu.Lock()
	v, ok := c.views[key.ID()]
	c.mu.Unlock()
	if !ok || v.rec == nil || now.Sub(v.at) > c.p.leaseTTL || now.Before(v.at) {
		return Decision{Action: Go, Circuit: v.rec.SnapshotAt(key, now)}
	}
	d, _ := c.p.acquire(v.rec, key, holder, now)
	if d.Action == Probe {
		until := now.Add(c.p.parkPoll/2 + c.p.jitter(holder, uint64(now.UnixNano()), c.p.parkPoll/2))
		return Decision{Action: Park, Until: until, Wait: WaitProbe, Circuit: v.rec.SnapshotAt(key, now)}
	}
	return d
}

// see keeps rec as the store's latest answer on id.
func (c *Circuits) see(id string, rec *Record, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.views == nil {
		c.views = map[string]view{}
	}
	if _, ok := c.views[id]; !ok && len(c.views) >= maxViews {
		oldest := ""
		for k, v := range c.views {
			if oldest == "" || v.at.Before(c.views[oldest].at) {
				oldest = k
			}
		}
		delete(c.views, oldest)
	}
	c.views[id] = view{rec: rec, at: now}
}

// Fail records a classified failure of a turn on key: a transient or hard
// one opens the circuit, re-opens it for the next step of its schedule
// when holder's probe failed (handing the lease on), or — already open —
// writes only if the failure moves the cooldown meaningfully (see
// params.fail). Request and unclassified failures do not touch circuits
// (no store access; the snapshot is the zero Snapshot).
func (c *Circuits) Fail(ctx context.Context, key Key, f Failure, holder string, now time.Time) (Snapshot, error) {
	if !opensCircuit(f.Class) {
		return Snapshot{}, nil
	}
	key, err := checkArgs(key, holder)
	if err != nil {
		return Snapshot{}, err
	}
	rec, err := c.update(ctx, "fail", key, now, func(cur *Record) (*Record, error) {
		return c.p.fail(cur, key, f, holder, now), nil
	})
	return rec.SnapshotAt(key, now), err
}

// Progress closes the circuit of key: call it once on the first sign of
// provider progress in a probe's turn (assistant or thought chunk, tool
// call) or on its successful return. Parked sessions are released over
// ReleaseWindow as they next ask.
func (c *Circuits) Progress(ctx context.Context, key Key, now time.Time) (Snapshot, error) {
	key, err := key.Normalize()
	if err != nil {
		return Snapshot{}, err
	}
	rec, err := c.update(ctx, "progress", key, now, func(cur *Record) (*Record, error) {
		return c.p.progress(cur, key, now), nil
	})
	return rec.SnapshotAt(key, now), err
}

// Refresh extends holder's probe lease on key by LeaseTTL from now, also
// a lease that ran out if nobody took it over. It fails with ErrLeaseLost
// when another session holds the lease or the circuit closed or re-opened.
func (c *Circuits) Refresh(ctx context.Context, key Key, holder string, now time.Time) (Lease, error) {
	return c.leaseOp(ctx, "refresh", key, holder, now, c.p.refresh)
}

// Release gives up holder's probe lease without an outcome (the probe's
// turn was cancelled or stopped), so another session may probe at once.
func (c *Circuits) Release(ctx context.Context, key Key, holder string, now time.Time) error {
	_, err := c.leaseOp(ctx, "release", key, holder, now, c.p.release)
	return err
}

func (c *Circuits) leaseOp(ctx context.Context, op string, key Key, holder string, now time.Time,
	fn func(*Record, Key, string, time.Time) (*Record, error)) (Lease, error) {
	key, err := checkArgs(key, holder)
	if err != nil {
		return Lease{}, err
	}
	rec, err := c.update(ctx, op, key, now, func(cur *Record) (*Record, error) {
		return fn(cur, key, holder, now)
	})
	if err != nil || rec == nil || rec.Lease == nil {
		return Lease{}, err
	}
	return *rec.Lease, nil
}

// Get returns the stored record of key (nil when none) and its snapshot.
func (c *Circuits) Get(ctx context.Context, key Key, now time.Time) (*Record, Snapshot, error) {
	key, err := key.Normalize()
	if err != nil {
		return nil, Snapshot{}, err
	}
	rec, err := c.update(ctx, "get", key, now, func(*Record) (*Record, error) { return nil, nil })
	return rec, rec.SnapshotAt(key, now), err
}

func checkArgs(key Key, holder string) (Key, error) {
	key, err := key.Normalize()
	if err == nil && (holder == "" || len(holder) > maxHolder || !printable(holder)) {
		err = fmt.Errorf("circuit: holder: want 1-%d printable bytes", maxHolder)
	}
	return key, err
}

// update runs one read-decide-swap operation: fn gets the current record
// (nil when none) and returns the record to store, or nil to change
// nothing. update returns the record in force afterwards. A lost swap is
// contention, not a failure: the operation waits a jittered backoff and
// decides again on the fresh record, up to casRounds times (then
// ErrContended). Only a call that errs or outlives its timeout (see
// callTimeout) is a store failure: it wraps ErrStore and leaves the store
// alone for a while (see Config.StoreRetry).
func (c *Circuits) update(ctx context.Context, op string, key Key, now time.Time,
	fn func(cur *Record) (*Record, error)) (*Record, error) {
	if c.store == nil {
		return nil, nil
	}
	if c.health.Skip(now) {
		return nil, fmt.Errorf("%w: %s: skipped after an earlier failure", ErrStore, op)
	}
	id := key.ID()
	start := c.clock()
	lost, lostOne := uint64(0), false // the revision the last swap lost at (0: a create), if one was lost
	inFlight := 0                     // lost swaps in a row whose re-read showed that same revision
	for k := 0; k < casRounds; {
		var cur *Record
		var rev uint64
		err := c.call(ctx, func(ctx context.Context) (err error) {
			cur, rev, err = c.store.Get(ctx, id)
			return err
		})
		if err != nil {
			return nil, c.storeFailed(op, now, err)
		}
		if back := c.settleDoubts(id, cur, rev); back != nil {
			if err := c.takeBack(ctx, op, key, *back, rev, now); err != nil {
				return nil, err
			}
			k++      // a round all the same: a take-back never loops
			continue // read again
		}
		next, err := fn(cur)
		if err != nil || next == nil {
			if err == nil {
				c.see(id, cur, now) // an operation the store served whole: a view to decide on if it fails later
			}
			c.storeAnswered()
			return cur, err
		}
		err = c.call(ctx, func(ctx context.Context) error { return c.store.CompareAndSwap(ctx, id, *next, rev) })
		if errors.Is(err, ErrConflict) {
			c.storeAnswered() // it answered: someone else wrote first
			if _, replicated := c.store.(Pinger); replicated && lostOne && rev == lost {
				// Lost again at a revision the re-read still shows, on a
				// replicated store (a Pinger: NATS): the write that won
				// is in flight — a slow store's leader holds it until its
				// quorum acknowledges — not a new racer. Waited for, not
				// counted as a round, for up to slowBudget of the
				// operation. (A local store's loser always reads the
				// winner's write.)
				if c.clock().Sub(start) > c.slowBudget(c.callTimeout()) {
					break
				}
				c.sleep(ctx, c.inFlightWait(inFlight))
				inFlight++
				continue
			}
			lost, lostOne, inFlight = rev, true, 0
			c.sleep(ctx, c.conflictWait(k))
			k++
			continue
		}
		if err != nil {
			c.doubtLease(op, id, cur, *next, rev, now) // it may land late (doubt.go)
			return nil, c.storeFailed(op, now, err)
		}
		c.see(id, next, now)
		c.swapped(id, rev)
		c.storeAnswered()
		return next, nil
	}
	return nil, fmt.Errorf("circuit: %s %s: %w", op, key, ErrContended)
}

// Pinger is a Store that can tell a late answer from a lost one: Ping
// returns nil when the store's connection is up and its server answers a
// round trip within ctx. A store over NATS is one.
type Pinger interface {
	Ping(ctx context.Context) error
}

// call runs one store call under the adaptive timeout and feeds its
// latency to the estimate when it answered. A store that is a Pinger is
// not given up at the timeout: the call's store is pinged then, and if it
// answers the call is slow, not failed — it is waited for, the store
// pinged again at each further timeout, up to MaxOpTimeout in all (see
// slowCall). A store that is not a Pinger fails the call at the timeout.
func (c *Circuits) call(ctx context.Context, fn func(context.Context) error) error {
	timeout := c.callTimeout()
	p, ok := c.store.(Pinger)
	if !ok {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		start := c.clock()
		err := fn(ctx)
		c.answered(err, c.clock().Sub(start))
		return err
	}
	return c.slowCall(ctx, p, timeout, fn)
}

// answered feeds a call's latency to the estimate when the store answered.
func (c *Circuits) answered(err error, took time.Duration) {
	if err == nil || errors.Is(err, ErrConflict) || errors.Is(err, ErrFormat) {
		c.sample(took)
	}
}

// sample adds one latency measurement (RFC 6298's estimator).
func (c *Circuits) sample(r time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.srtt == 0 {
		c.srtt, c.rttv = max(r, time.Microsecond), r/2
		return
	}
	diff := c.srtt - r
	if diff < 0 {
		diff = -diff
	}
	c.rttv = (3*c.rttv + diff) / 4
	c.srtt = (7*c.srtt + r) / 8
}

// callTimeout is how long one store call may take: four retransmission
// timeouts of the measured latency, within [OpTimeout, MaxOpTimeout].
func (c *Circuits) callTimeout() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return min(max(4*(c.srtt+4*c.rttv), c.opTimeout), c.maxOpTimeout)
}

// inFlightWait is the jittered wait after the n-th swap in a row lost
// to a write the store does not show yet: from maxConflictWait/16,
// doubling, up to maxConflictWait.
func (c *Circuits) inFlightWait(n int) time.Duration {
	ceil := min((maxConflictWait/16)<<min(n, 4), maxConflictWait)
	return ceil/2 + rand.N(ceil/2) + 1
}

// conflictWait is the jittered wait after the k-th lost swap in a row.
func (c *Circuits) conflictWait(k int) time.Duration {
	c.mu.Lock()
	base := max(c.srtt, minConflictWait)
	c.mu.Unlock()
	ceil := min(base<<min(k, 16), maxConflictWait)
	return rand.N(ceil) + 1
}

func (c *Circuits) storeFailed(op string, now time.Time, err error) error {
	if errors.Is(err, ErrFormat) {
		// One record this build cannot read: the store itself answers.
		return fmt.Errorf("%w: %s: %w", ErrStore, op, err)
	}
	var first bool
	var wait time.Duration
	if errors.Is(err, kvstore.ErrUnsettled) {
		first = c.health.Unsettled(now) // nothing stored, a leader in a moment: asked again at the next operation
	} else {
		first, wait = c.health.Failed(now)
	}
	if first {
		c.log.Warn("circuit store unavailable", "op", op, "err", err, "retry_after_ms", wait.Milliseconds())
	}
	if errors.Is(err, ErrStore) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrStore, op, err)
}

func (c *Circuits) storeAnswered() {
	if c.health.Answered() {
		c.log.Info("circuit store recovered")
	}
}
