package presence

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Config configures a Publisher. Zero durations take the defaults.
type Config struct {
	Store     *Store
	Namespace string // the circuits' namespace ("" : "default")
	Holder    string // host/pid/guard: unique across processes and machines
	Host      string
	PID       int
	Agent     string // the agent as known at start (Update may name it)
	Lease     time.Duration
	Every     time.Duration
	MinGap    time.Duration
	// Rand draws the heartbeat's jitter in [0, 1); nil: math/rand/v2.
	Rand   func() float64
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger     // nil: discarded
}

// Publisher keeps one process's record in the store: it writes at start,
// on every heartbeat and soon after a change, and deletes the record on
// Close.
type Publisher struct {
	cfg     Config
	key     string
	changed chan struct{} // 1-buffered: a change since the last write
	done    chan struct{} // closed by Close
	exited  chan struct{} // closed when the heartbeat goroutine returns

	mu  sync.Mutex
	rec Record // the record as the session has it now

	// The goroutine's own (no lock): whether the store failed on the
	// last write.
	failed bool
}

// Beat is the wait before the next heartbeat: every, drawn uniformly
// within ±jitter of it from u in [0, 1).
func Beat(every time.Duration, jitter, u float64) time.Duration {
	return time.Duration(float64(every) * (1 - jitter + 2*jitter*u))
}

// Start begins publishing; the first write happens on the publisher's
// goroutine, never in the caller's.
func Start(cfg Config) (*Publisher, error) {
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	key, err := Key(cfg.Namespace, cfg.Holder)
	if err != nil {
		return nil, err
	}
	if cfg.Store == nil || cfg.Holder == "" {
		return nil, errors.New("presence: a store and a holder are needed")
	}
	cfg.Lease = orDefault(cfg.Lease, Lease)
	cfg.Every = orDefault(cfg.Every, Every)
	cfg.MinGap = orDefault(cfg.MinGap, MinGap)
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now().UTC()
	p := &Publisher{cfg: cfg, key: key, changed: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{}),
		rec: Record{Version: Version, Namespace: cfg.Namespace, Holder: cfg.Holder, Host: cfg.Host, PID: cfg.PID,
			Agent: cfg.Agent, State: StateStarting, Started: now}}
	// The heartbeat goroutine: Close ends it (done) and waits for it
	// (exited).
	go p.run()
	return p, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Key is the record's storage key.
func (p *Publisher) Key() string { return p.key }

// Update changes the session's record in memory (fn must not keep r) and
// has it written soon. It never blocks on the store.
func (p *Publisher) Update(fn func(r *Record)) {
	p.mu.Lock()
	fn(&p.rec)
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Snapshot is the record as the session has it now.
func (p *Publisher) Snapshot() Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.rec
	r.Errors = append([]ErrorCount(nil), r.Errors...)
	return r
}

// Close stops the heartbeat and deletes the record (bounded by
// CallTimeout): the session is gone at once, not after its lease.
func (p *Publisher) Close() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	close(p.done)
	<-p.exited
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	return p.cfg.Store.Delete(ctx, p.key)
}

func (p *Publisher) run() {
	defer close(p.exited)
	t := time.NewTimer(0)
	defer t.Stop()
	var last time.Time // the last write, on the process's clock
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		case <-p.changed:
			// A change: write now, or once MinGap has passed since the
			// last write.
			if wait := p.cfg.MinGap - time.Since(last); !last.IsZero() && wait > 0 {
				t.Stop()
				select {
				case <-t.C:
				default:
				}
				t.Reset(wait)
				continue
			}
		}
		select { // a change that came before the write is in it; one during it signals again
		case <-p.changed:
		default:
		}
		last = time.Now()
		p.write()
		t.Stop()
		select {
		case <-t.C:
		default:
		}
		t.Reset(Beat(p.cfg.Every, Jitter, p.cfg.Rand()))
	}
}

// write puts the record with a fresh heartbeat and lease.
func (p *Publisher) write() {
	now := p.cfg.Now().UTC()
	p.mu.Lock()
	p.rec.Prune(now)
	p.rec.Heartbeat, p.rec.Expires = now, now.Add(p.cfg.Lease)
	r := p.rec
	r.Errors = append([]ErrorCount(nil), r.Errors...)
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	err := p.put(ctx, r)
	if errors.Is(err, ErrConflict) {
		err = p.put(ctx, r) // a lost race on the lock or the revision: once more
	}
	if err != nil {
		if !p.failed {
			p.failed = true
			p.cfg.Logger.Warn("presence store unavailable", "err", err)
		}
		return
	}
	if p.failed {
		p.failed = false
		p.cfg.Logger.Info("presence store recovered")
	}
}

// put writes r at the revision stored now. The key is this process's
// alone, so the read is only for the revision (a compare-and-swap needs
// it; the stores do not return the one they wrote).
func (p *Publisher) put(ctx context.Context, r Record) error {
	_, rev, err := p.cfg.Store.Get(ctx, p.key)
	if err != nil && !errors.Is(err, errVersion) {
		return err
	}
	return p.cfg.Store.Put(ctx, p.key, r, rev)
}
