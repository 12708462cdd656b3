package guard

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/transport"
)

// Publishing held prompts for operators (held/doc.go; `acp-guard held`).
// A prompt held in an actionable state for held.PublishAfter is written to
// the held-prompt board (the store the circuits use), rewritten when its
// state changes within the hold and every held.RefreshEvery, and written
// once more, with a short expiry, when the hold ends — with the result of
// the operator's request that ended it, if one did. While the guard has
// prompts on the board it watches its own entries: a request an operator
// wrote there comes back into the event loop (operatorRequest) and takes
// the same path as the client's MethodRecovery. Store calls run on the
// board's own worker (worker.go) and never hold up a turn; a store that fails only means the prompt is not visible to
// operators.

// promptHold is a prompt's part in the held-prompt board.
type promptHold struct {
	n         uint64    // the prompt's holds so far (held.Entry.Hold)
	since     time.Time // when the current hold began
	next      time.Time // the next attempt, zero when unknown
	stop      func() bool
	published bool         // an entry of this hold is on the board
	result    *held.Result // the answer to an operator's request, for the next write
	handled   string       // the id of the last request taken
}

func (h *promptHold) stopTimer() {
	if h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

// board is the guard's part in the held-prompt board: the event loop's
// view, the worker its store calls run on, and the running watch.
type board struct {
	store    *held.Board        // Config.Held; nil: not published
	ns       string             // the circuits' namespace
	prefix   string             // this guard's entries: held.ProcessPrefix
	ids      map[string]*prompt // published entry id → its prompt
	watching bool               // a watch is started (or starting) on the held worker
	w        worker             // the board's store calls
	watch    heldWatch
	m        *machine
	circ     *circuitClient // the holder names
	ag       *agent
	acts     *actions
	log      *slog.Logger
}

func (b *board) on() bool { return b.store.Enabled() }

// holdMoved follows a transition for the board: a hold begins (the
// entry is published once it lasted held.PublishAfter), changes state
// (rewritten at once) or ends (written once more, then left to expire).
func (b *board) holdMoved(c transport.Ctl, p *prompt, e edge, s step) {
	switch {
	case !e.from.actionable() && e.to.actionable():
		p.hold.n++
		p.hold.since = c.Now()
		p.hold.published = false
	case !e.from.actionable():
		return
	}
	if e.to.actionable() && (s.on == onWait || s.on == onRetry) {
		p.hold.next = deadlineOf(c, s)
	}
	if !b.on() {
		return
	}
	switch {
	case !e.from.actionable():
		b.armPublish(c, p, held.PublishAfter)
	case e.to.actionable():
		if p.hold.published && e.from != e.to {
			b.publish(c, p)
		}
	default:
		p.hold.stopTimer()
		if p.hold.published {
			b.publish(c, p)
		}
	}
}

// deadlineOf is when a wait or retry decided in s is due.
func deadlineOf(c transport.Ctl, s step) time.Time {
	if !s.d.Deadline.IsZero() {
		return s.d.Deadline
	}
	return c.Now().Add(s.d.Delay)
}

// armPublish (re)writes p's entry after d, and keeps refreshing it while
// the hold lasts (under the hold's fence).
func (b *board) armPublish(c transport.Ctl, p *prompt, d time.Duration) {
	p.hold.stopTimer()
	p.hold.stop = c.After(d, b.m.holdFence(p, p.hold.n).then(func() {
		p.hold.stop = nil
		b.publish(c, p)
	}))
}

// publish writes p's entry as the guard sees it now: held (then it is
// refreshed every held.RefreshEvery) or ended (kept held.ResultTTL for the
// result). The write runs on the held worker; a request found on the
// entry comes back to operatorRequest.
func (b *board) publish(c transport.Ctl, p *prompt) {
	if b.ids == nil {
		prefix, err := held.ProcessPrefix(b.namespace(), b.circ.processID())
		if err != nil {
			b.log.Debug("held prompts not published", "err", err)
			return
		}
		b.prefix, b.ids = prefix, map[string]*prompt{}
	}
	now := c.Now()
	e := b.entry(c, p, now)
	id := held.ID(b.prefix, p.session, string(p.client.ID))
	if p.state.actionable() {
		p.hold.published = true
		b.ids[id] = p
		b.armPublish(c, p, held.RefreshEvery)
	} else {
		p.hold.published = false
		delete(b.ids, id)
	}
	store := b.store
	b.w.do(c, func() func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*held.CallTimeout)
		defer cancel()
		req, err := store.Put(ctx, id, e, now)
		if err != nil {
			b.log.Debug("held prompt not published", "session", e.SessionID, "err", err)
		}
		return func() {
			b.keepWatching(c) // also when the write failed: the last entry may be gone
			if req != nil {
				b.operatorRequest(c, id, *req)
			}
		}
	})
}

// entry is p's board entry at now.
func (b *board) entry(c transport.Ctl, p *prompt, now time.Time) held.Entry {
	e := held.Entry{
		Namespace: b.namespace(), Holder: b.circ.holder(p), Host: hostName, PID: os.Getpid(),
		SessionID: p.session, RequestID: string(p.client.ID), Agent: b.ag.adapter, Model: b.ag.modelOf(p),
		State: p.state.String(), Hold: p.hold.n, Since: p.hold.since.UTC(),
		Attempt: p.attempt, MaxRetries: p.maxRetries, UpdatedAt: now.UTC(), Expires: now.Add(held.TTL).UTC(),
	}
	if f := p.last; f != nil {
		e.Code, e.Class = f.verdict.Code, string(f.verdict.Class)
	}
	if !p.hold.next.IsZero() {
		t := p.hold.next.UTC()
		e.Next = &t
	}
	if p.state.actionable() {
		e.Offered = b.acts.offered(c, p)
	} else {
		e.Expires = now.Add(held.ResultTTL).UTC()
	}
	if r := p.hold.result; r != nil {
		res := *r // the worker gets its own copy
		res.State, p.hold.result = p.state.String(), nil
		e.Result = &res
	}
	return e
}

// operatorRequest takes an operator's request found on entry id: the
// action, if the request is for the prompt's current hold and new; then
// the entry is written with the result (it is, by holdMoved, when the
// action ended the hold).
func (b *board) operatorRequest(c transport.Ctl, id string, r held.Request) {
	p := b.ids[id]
	if p == nil || r.Hold != p.hold.n || r.ID == p.hold.handled || b.m.prompts[p.client] != p {
		return
	}
	p.hold.handled = r.ID
	p.hold.result = &held.Result{ID: r.ID, Action: r.Action, At: c.Now().UTC()}
	err := b.acts.act(c, p, r.Action, ByOperator)
	if res := p.hold.result; res != nil { // not written when the hold ended: refused
		if err != nil {
			res.Error = err.Error()
		}
		b.publish(c, p)
	}
}

// keepWatching starts the watch on this guard's entries while it has
// some on the board, and stops it when it has none left. Called in the
// event loop after each write; the watch itself is started and stopped on
// the held worker (heldWatch).
func (b *board) keepWatching(c transport.Ctl) {
	want := len(b.ids) > 0 && !b.m.closed
	if want == b.watching {
		return
	}
	b.watching = want
	if !want {
		b.w.do(c, func() func() { b.watch.end(); return nil })
		return
	}
	store, prefix, post := b.store, b.prefix, posterOf(c)
	if post == nil {
		return // offline: nobody else writes requests
	}
	b.w.do(c, func() func() {
		stop, err := store.Watch(prefix, func(st held.Stored) {
			if r := st.Entry.Request; r != nil {
				post(func() { b.operatorRequest(c, st.ID, *r) })
			}
		})
		if err != nil {
			b.log.Debug("held prompts not watched; requests are read at the next refresh", "err", err)
			return func() { b.watching = false } // the next write tries again
		}
		b.watch.set(stop)
		return nil
	})
}

// heldWatch owns the running watch's stop. It is set and ended on the
// held worker, and closed by Guard.Close (board.close): a watch started after Close is
// stopped at once.
type heldWatch struct {
	mu     sync.Mutex
	stop   func()
	closed bool
}

func (w *heldWatch) set(stop func()) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		stop()
		return
	}
	w.stop = stop
	w.mu.Unlock()
}

func (w *heldWatch) end() {
	w.mu.Lock()
	stop := w.stop
	w.stop = nil
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (w *heldWatch) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.end()
}

// namespace is the namespace of the board's entries: the circuits'.
func (b *board) namespace() string {
	if b.ns == "" {
		return circuit.DefaultNamespace
	}
	return b.ns
}

// close ends the board's worker and its watch.
func (b *board) close() {
	b.w.close()
	b.watch.close()
}

// hostName is this machine's name, bounded.
var hostName = func() string {
	h, _ := os.Hostname()
	if len(h) > 64 {
		h = h[:64]
	}
	return h
}()
