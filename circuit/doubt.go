package circuit

import (
	"bytes"
	"context"
	"errors"
	"time"
)

// A swap that failed with a store error was reported as not made: the
// caller decided on its own (ErrStore). On a replicated store that is not
// always the end of it. A stream leader that has lost its quorum without
// knowing it yet accepts the swap into its log and cannot commit it; the
// call times out and the read back still shows the old revision. When the
// whole cluster comes back and that server leads again, its log is
// committed and the swap lands — seconds or minutes after its session
// parked instead of probing, or decided without the circuit. Such a write
// is a decision nobody took: a probe lease nobody uses, a circuit opened
// or closed by a host that was cut off.
//
// Only a probe lease is taken back: a grant the session was not told of
// (it parked on its view instead of probing) is a decision nobody took.
// A failure or a success that lands late is a fact a session observed —
// on a file store, where a swap past its timeout still completes, that is
// common under load, and undoing it would close a circuit the provider's
// failures opened. (On a cluster whose majority lives on, the cut-off
// leader's entries are discarded by the new term; see docs/CIRCUITS.md.)
//
// So every lease swap that failed with a store error is remembered as a
// doubt:
// the revision it was made at, the record it replaced and the record it
// wrote. The next operation of this process on that key that reads it
// settles the doubt: the record in force is exactly the one written, at a
// newer revision — the swap landed late, and is taken back (the replaced
// record is swapped in); still the same revision — it may yet land, kept; anything
// else — it never landed, or others wrote after it, dropped. Only a
// session's own late write is ever undone, and only if nothing was
// written over it.
type doubt struct {
	rev   uint64  // the revision the swap was made at
	prev  *Record // what it would have replaced (a lease is granted on a record there)
	wrote []byte  // the record it wrote, encoded
	at    time.Time
}

// Doubts are few (a swap fails only while the store is away) and bounded:
// per key the latest maxDoubtsPerKey, in all maxDoubts keys.
const (
	maxDoubtsPerKey = 4
	maxDoubts       = 256
)

// doubtLease remembers the swap of an Acquire that failed with a store
// error when it granted a probe lease: the session was not told of it
// (it parked on its view), so if it lands late it is taken back.
func (c *Circuits) doubtLease(op, id string, prev *Record, next Record, rev uint64, now time.Time) {
	if op == "acquire" && prev != nil && next.Lease != nil && next.Lease.Holder != "" {
		c.doubtSwap(id, prev, next, rev, now)
	}
}

// takeBack swaps back at rev the record that one of this process's
// swaps, reported failed and landed late, replaced. A conflict is no
// error: someone wrote over it, and it stays theirs.
func (c *Circuits) takeBack(ctx context.Context, op string, key Key, back Record, rev uint64, now time.Time) error {
	err := c.call(ctx, func(ctx context.Context) error { return c.store.CompareAndSwap(ctx, key.ID(), back, rev) })
	switch {
	case err == nil:
		c.log.Info("circuit store: a write reported failed landed late; taken back", "op", op, "key", key.String())
	case !errors.Is(err, ErrConflict):
		return c.storeFailed(op, now, err)
	}
	return nil
}

// doubtSwap remembers a swap of next over prev at rev that failed with a
// store error.
func (c *Circuits) doubtSwap(id string, prev *Record, next Record, rev uint64, now time.Time) {
	b, err := encodeRecord(next)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.doubts == nil {
		c.doubts = map[string][]doubt{}
	}
	if _, ok := c.doubts[id]; !ok && len(c.doubts) >= maxDoubts {
		oldest := ""
		for k, ds := range c.doubts {
			if oldest == "" || ds[len(ds)-1].at.Before(c.doubts[oldest][len(c.doubts[oldest])-1].at) {
				oldest = k
			}
		}
		delete(c.doubts, oldest)
	}
	ds := append(c.doubts[id], doubt{rev: rev, prev: prev, wrote: b, at: now})
	if len(ds) > maxDoubtsPerKey {
		ds = ds[len(ds)-maxDoubtsPerKey:]
	}
	c.doubts[id] = ds
}

// settleDoubts is called with the record of id as the store answered it
// (cur at rev). It returns the record to swap in at rev when cur is one of
// this process's failed swaps that landed late; nil otherwise, dropping
// the doubts that cur shows settled (a taken-back swap is dropped by the
// read after the take-back).
func (c *Circuits) settleDoubts(id string, cur *Record, rev uint64) *Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	ds, ok := c.doubts[id]
	if !ok {
		return nil
	}
	var got []byte
	if cur != nil {
		got, _ = encodeRecord(*cur)
	}
	keep := ds[:0]
	for _, d := range ds {
		switch {
		case rev == d.rev:
			keep = append(keep, d) // not landed yet: it may still
		case got != nil && rev > d.rev && bytes.Equal(got, d.wrote):
			// Kept until a read shows it settled: the take-back's swap
			// may fail too.
			back := *d.prev
			return &back
		}
	}
	if len(keep) == 0 {
		delete(c.doubts, id)
	} else {
		c.doubts[id] = keep
	}
	return nil
}

// swapped drops the doubts of id made at rev once a swap at rev landed:
// the record moved on, and they can only lose to it.
func (c *Circuits) swapped(id string, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ds, ok := c.doubts[id]
	if !ok {
		return
	}
	keep := ds[:0]
	for _, d := range ds {
		if d.rev != rev {
			keep = append(keep, d)
		}
	}
	if len(keep) == 0 {
		delete(c.doubts, id)
	} else {
		c.doubts[id] = keep
	}
}
