package held

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// Timing of the held-prompt board.
const (
	// PublishAfter: a prompt is published only once it has been held this
	// long (a short retry wait costs the store nothing).
	PublishAfter = time.Second
	// TTL is how long a held entry stays valid without a refresh; the
	// holder rewrites it every RefreshEvery.
	TTL          = 2 * time.Minute
	RefreshEvery = TTL / 2
	// ResultTTL is how long an ended entry stays readable (for the asker
	// to read its result).
	ResultTTL = 30 * time.Second
	// CallTimeout bounds one store call.
	CallTimeout = 2 * time.Second
	// casRounds bounds the read-swap rounds of one write.
	casRounds = 8
	// firstRetry, maxRetry: after a failure the store is left alone for
	// a pause of 0.5 s, doubling up to 8 s (kvstore.Health: each drawn
	// in [half, whole]).
	firstRetry = 500 * time.Millisecond
	maxRetry   = 8 * time.Second
)

// Errors of Ask: why an action cannot be asked.
var (
	ErrNotHeld   = errors.New("no held prompt")
	ErrNotOffer  = errors.New("action not offered")
	ErrBusy      = errors.New("another action is pending")
	ErrContended = errors.New("held: too many concurrent updates")
)

// Board is the held-prompt layer over a Store: every call bounded by
// CallTimeout, a lost compare-and-swap retried on the fresh entry (at most
// casRounds times), and a store that failed left alone for a while —
// calls in between fail at once with ErrStore, and the outage is logged
// once. Nothing a guard does waits for it: the guard calls it off its
// event loop (guard/held.go). Safe for concurrent use.
type Board struct {
	store Store
	log   *slog.Logger

	health *kvstore.Health
}

// NewBoard returns the board over st (nil: no store; every call fails).
func NewBoard(st Store, log *slog.Logger) *Board {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Board{store: st, log: log, health: kvstore.NewHealth(st, firstRetry, maxRetry)}
}

// Enabled reports whether the board has a store.
func (b *Board) Enabled() bool { return b != nil && b.store != nil }

// Close closes the store.
func (b *Board) Close() error {
	if !b.Enabled() {
		return nil
	}
	return b.store.Close()
}

// Put writes the holder's view e under id, creating the entry or updating
// it. A request the store holds for e's hold that e's result does not
// answer is kept, and returned: the holder has an action to take. A
// request for an earlier hold is answered as stale. now is the holder's
// event time.
func (b *Board) Put(ctx context.Context, id string, e Entry, now time.Time) (*Request, error) {
	if err := b.ready(now); err != nil {
		return nil, err
	}
	e.Bound()
	for range casRounds {
		cur, rev, err := b.get(ctx, id)
		if err != nil {
			return nil, b.failed("put", now, err)
		}
		next := merge(cur, e)
		err = b.call(ctx, func(ctx context.Context) error { return b.store.CompareAndSwap(ctx, id, next, rev) })
		if errors.Is(err, ErrConflict) {
			pause(ctx)
			continue
		}
		if err != nil {
			return nil, b.failed("put", now, err)
		}
		b.answered()
		return next.Request, nil
	}
	return nil, ErrContended
}

// merge is what the holder writes over cur: its view e, keeping cur's
// unanswered request for the same hold.
func merge(cur *Entry, e Entry) Entry {
	if cur == nil || cur.Request == nil || (e.Result != nil && e.Result.ID == cur.Request.ID) {
		return e
	}
	r := cur.Request
	switch {
	case r.Hold == e.Hold && Actionable(e.State):
		e.Request = r
	case e.Result == nil:
		e.Result = &Result{ID: r.ID, Action: r.Action, State: e.State, At: e.UpdatedAt,
			Error: fmt.Sprintf("the prompt is no longer in hold %d (now %s, hold %d)", r.Hold, e.State, e.Hold)}
	}
	return e
}

// Held returns the entries under prefix (a NamespacePrefix) that are held
// at now, in id order.
func (b *Board) Held(ctx context.Context, prefix string, now time.Time) ([]Stored, error) {
	if !b.Enabled() {
		return nil, fmt.Errorf("%w: none configured", ErrStore)
	}
	var all []Stored
	err := b.call(ctx, func(ctx context.Context) (err error) {
		all, err = b.store.List(ctx, prefix)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: list: %w", ErrStore, err)
	}
	out := all[:0]
	for _, st := range all {
		if st.Entry.Held(now) {
			out = append(out, st)
		}
	}
	return out, nil
}

// Ask writes req into the held entry id by compare-and-swap: the entry
// must be held at now, offer req.Action and have no other request
// pending. req.Hold is set to the entry's hold. It returns the entry as
// it stood when the request went in.
func (b *Board) Ask(ctx context.Context, id string, req Request, now time.Time) (Entry, error) {
	if !b.Enabled() {
		return Entry{}, fmt.Errorf("%w: none configured", ErrStore)
	}
	for range casRounds {
		cur, rev, err := b.get(ctx, id)
		switch {
		case err != nil:
			return Entry{}, fmt.Errorf("%w: get: %w", ErrStore, err)
		case !cur.Held(now):
			return Entry{}, ErrNotHeld
		case !cur.Offers(req.Action):
			return *cur, fmt.Errorf("%w: %s is %s and offers %s", ErrNotOffer, cur.SessionID, cur.State, strings.Join(cur.Offered, ", "))
		case cur.Request != nil && cur.Request.ID != req.ID:
			return *cur, fmt.Errorf("%w: %s (asked %s)", ErrBusy, cur.Request.Action, cur.Request.At.Format(time.RFC3339))
		}
		next := *cur
		req.Hold = cur.Hold
		next.Request = &req
		err = b.call(ctx, func(ctx context.Context) error { return b.store.CompareAndSwap(ctx, id, next, rev) })
		if errors.Is(err, ErrConflict) {
			pause(ctx)
			continue
		}
		if err != nil {
			return Entry{}, fmt.Errorf("%w: put: %w", ErrStore, err)
		}
		return next, nil
	}
	return Entry{}, ErrContended
}

// Await reads id every poll until the holder has answered the request
// reqID, and returns its result; it fails when ctx ends first.
func (b *Board) Await(ctx context.Context, id, reqID string, poll time.Duration) (Result, error) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		cur, _, err := b.get(ctx, id)
		if err == nil && cur != nil && cur.Result != nil && cur.Result.ID == reqID {
			return *cur.Result, nil
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-t.C:
		}
	}
}

// Watch passes entries under prefix that may have changed to fn (see
// Store.Watch).
func (b *Board) Watch(prefix string, fn func(Stored)) (func(), error) {
	if !b.Enabled() {
		return nil, fmt.Errorf("%w: none configured", ErrStore)
	}
	return b.store.Watch(prefix, fn)
}

func (b *Board) get(ctx context.Context, id string) (e *Entry, rev uint64, err error) {
	err = b.call(ctx, func(ctx context.Context) error {
		e, rev, err = b.store.Get(ctx, id)
		return err
	})
	return e, rev, err
}

func (b *Board) call(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return fn(ctx)
}

// pause waits a little after a lost swap, so racers do not collide again.
func pause(ctx context.Context) {
	t := time.NewTimer(time.Millisecond + rand.N(10*time.Millisecond))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// ready fails at once while a failed store is left alone.
func (b *Board) ready(now time.Time) error {
	if !b.Enabled() {
		return fmt.Errorf("%w: none configured", ErrStore)
	}
	if b.health.Skip(now) {
		return fmt.Errorf("%w: skipped after an earlier failure", ErrStore)
	}
	return nil
}

func (b *Board) failed(op string, now time.Time, err error) error {
	if errors.Is(err, ErrFormat) {
		return fmt.Errorf("%w: %s: %w", ErrStore, op, err)
	}
	if first, wait := b.health.Failed(now); first {
		b.log.Warn("held-prompt store unavailable; operators cannot see or move held prompts", "op", op, "err", err, "retry_after_ms", wait.Milliseconds())
	}
	return fmt.Errorf("%w: %s: %w", ErrStore, op, err)
}

func (b *Board) answered() {
	if b.health.Answered() {
		b.log.Info("held-prompt store recovered")
	}
}
