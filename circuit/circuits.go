package circuit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Defaults of Config's zero fields.
const (
	DefaultLeaseTTL      = 30 * time.Second
	DefaultParkPoll      = 2 * time.Second
	DefaultReleaseWindow = 3 * time.Second
	DefaultMaxCooldown   = 24 * time.Hour
	DefaultOpTimeout     = 2 * time.Second
	DefaultStoreRetry    = 30 * time.Second
)

// maxHolder bounds a lease holder id.
const maxHolder = 256

// casRounds bounds the read-decide-swap rounds of one operation. Racers on
// one key need two rounds (the first swap wins, the others re-read and
// park), so running out means a store under heavy churn.
const casRounds = 16

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
	// OpTimeout bounds each operation on the store.
	OpTimeout time.Duration
	// StoreRetry is how long the store is left alone after it failed:
	// operations in that time answer at once as if circuits were off.
	StoreRetry time.Duration
	// Logger receives "circuit store unavailable" once per store outage
	// and "circuit store recovered"; nil discards.
	Logger *slog.Logger
}

// Circuits is the circuit layer: the transitions of doc.go over a Store.
// Safe for concurrent use. It starts no goroutines.
type Circuits struct {
	store      Store
	p          params
	opTimeout  time.Duration
	storeRetry time.Duration
	log        *slog.Logger

	mu        sync.Mutex
	down      bool      // the store failed and has not answered since
	downUntil time.Time // skip the store until then
}

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
		opTimeout:  or(cfg.OpTimeout, DefaultOpTimeout),
		storeRetry: or(cfg.StoreRetry, DefaultStoreRetry),
		log:        log,
	}
}

// Enabled reports whether a store is configured.
func (c *Circuits) Enabled() bool { return c.store != nil }

// RefreshEvery is how often a probe should Refresh its lease.
func (c *Circuits) RefreshEvery() time.Duration { return c.p.leaseTTL / 3 }

// Acquire asks, for a session about to re-dispatch a failed turn on key,
// whether it may. holder identifies the session's turn (unique across
// processes and machines, e.g. host/pid/session/request). On a store
// failure the decision is Go and the error wraps ErrStore. After casRounds
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
		return Decision{Action: Park, Until: until, Circuit: d.Circuit}, err
	case err != nil:
		return Decision{Action: Go, Circuit: (*Record)(nil).SnapshotAt(key, now)}, err
	}
	return d, nil
}

// Fail records a classified failure of a turn on key: a transient or hard
// one opens the circuit or extends it to f.CooldownUntil (capped by
// MaxCooldown); if holder held the probe lease, the lease is handed on.
// Request and unclassified failures do not touch circuits (no store
// access; the snapshot is the zero Snapshot).
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
// nothing. update returns the record in force afterwards. Store failures
// wrap ErrStore and leave the store alone for StoreRetry.
func (c *Circuits) update(ctx context.Context, op string, key Key, now time.Time,
	fn func(cur *Record) (*Record, error)) (*Record, error) {
	if c.store == nil {
		return nil, nil
	}
	if c.skipStore(now) {
		return nil, fmt.Errorf("%w: %s: skipped after an earlier failure", ErrStore, op)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opTimeout)
	defer cancel()
	id := key.ID()
	for range casRounds {
		cur, rev, err := c.store.Get(ctx, id)
		if err != nil {
			return nil, c.storeFailed(op, now, err)
		}
		next, err := fn(cur)
		if err != nil || next == nil {
			c.storeAnswered()
			return cur, err
		}
		err = c.store.CompareAndSwap(ctx, id, *next, rev)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return nil, c.storeFailed(op, now, err)
		}
		c.storeAnswered()
		return next, nil
	}
	return nil, fmt.Errorf("circuit: %s %s: %w", op, key, ErrContended)
}

func (c *Circuits) skipStore(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.down && now.Before(c.downUntil)
}

func (c *Circuits) storeFailed(op string, now time.Time, err error) error {
	if errors.Is(err, ErrFormat) {
		// One record this build cannot read: the store itself answers.
		return fmt.Errorf("%w: %s: %w", ErrStore, op, err)
	}
	c.mu.Lock()
	first := !c.down
	c.down, c.downUntil = true, now.Add(c.storeRetry)
	c.mu.Unlock()
	if first {
		c.log.Warn("circuit store unavailable", "op", op, "err", err, "retryAfter", c.storeRetry)
	}
	if errors.Is(err, ErrStore) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrStore, op, err)
}

func (c *Circuits) storeAnswered() {
	c.mu.Lock()
	was := c.down
	c.down = false
	c.mu.Unlock()
	if was {
		c.log.Info("circuit store recovered")
	}
}
