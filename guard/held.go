package guard

import (
	"context"
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
// guard's second worker (heldOps, worker.go) and never hold
// up a turn; a store that fails only means the prompt is not visible to
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

// heldBoard is the guard's part in the board (event-loop state).
type heldBoard struct {
	prefix   string             // this guard's entries: held.ProcessPrefix
	ids      map[string]*prompt // published entry id → its prompt
	watching bool               // a watch is started (or starting) on the held worker
}

func (g *Guard) heldOn() bool { return g.cfg.Held.Enabled() }

// holdMoved follows a transition for the board: a hold begins (the
// entry is published once it lasted held.PublishAfter), changes state
// (rewritten at once) or ends (written once more, then left to expire).
func (g *Guard) holdMoved(c transport.Ctl, p *prompt, e edge, s step) {
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
	if !g.heldOn() {
		return
	}
	switch {
	case !e.from.actionable():
		g.armPublish(c, p, held.PublishAfter)
	case e.to.actionable():
		if p.hold.published && e.from != e.to {
			g.publish(c, p)
		}
	default:
		p.hold.stopTimer()
		if p.hold.published {
			g.publish(c, p)
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
// the hold lasts.
func (g *Guard) armPublish(c transport.Ctl, p *prompt, d time.Duration) {
	p.hold.stopTimer()
	n := p.hold.n
	p.hold.stop = c.After(d, func() {
		p.hold.stop = nil
		if p.hold.n != n || !p.state.actionable() || g.closed {
			return
		}
		g.publish(c, p)
	})
}

// publish writes p's entry as the guard sees it now: held (then it is
// refreshed every held.RefreshEvery) or ended (kept held.ResultTTL for the
// result). The write runs on the held worker; a request found on the
// entry comes back to operatorRequest.
func (g *Guard) publish(c transport.Ctl, p *prompt) {
	if g.heldBoard.ids == nil {
		prefix, err := held.ProcessPrefix(g.heldNamespace(), g.processID())
		if err != nil {
			g.log.Debug("held prompts not published", "err", err)
			return
		}
		g.heldBoard.prefix, g.heldBoard.ids = prefix, map[string]*prompt{}
	}
	now := c.Now()
	e := g.entry(c, p, now)
	id := held.ID(g.heldBoard.prefix, p.session, string(p.client.ID))
	if p.state.actionable() {
		p.hold.published = true
		g.heldBoard.ids[id] = p
		g.armPublish(c, p, held.RefreshEvery)
	} else {
		p.hold.published = false
		delete(g.heldBoard.ids, id)
	}
	board := g.cfg.Held
	g.heldOps.do(c, func() func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*held.CallTimeout)
		defer cancel()
		req, err := board.Put(ctx, id, e, now)
		if err != nil {
			g.log.Debug("held prompt not published", "session", e.SessionID, "err", err)
		}
		return func() {
			g.keepWatching(c) // also when the write failed: the last entry may be gone
			if req != nil {
				g.operatorRequest(c, id, *req)
			}
		}
	})
}

// entry is p's board entry at now.
func (g *Guard) entry(c transport.Ctl, p *prompt, now time.Time) held.Entry {
	e := held.Entry{
		Namespace: g.heldNamespace(), Holder: g.holder(p), Host: hostName, PID: os.Getpid(),
		SessionID: p.session, RequestID: string(p.client.ID), Agent: g.adapter, Model: g.modelOf(p),
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
		e.Offered = g.offered(c, p)
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
func (g *Guard) operatorRequest(c transport.Ctl, id string, r held.Request) {
	p := g.heldBoard.ids[id]
	if p == nil || r.Hold != p.hold.n || r.ID == p.hold.handled || g.prompts[p.client] != p {
		return
	}
	p.hold.handled = r.ID
	p.hold.result = &held.Result{ID: r.ID, Action: r.Action, At: c.Now().UTC()}
	err := g.act(c, p, r.Action, ByOperator)
	if res := p.hold.result; res != nil { // not written when the hold ended: refused
		if err != nil {
			res.Error = err.Error()
		}
		g.publish(c, p)
	}
}

// keepWatching starts the watch on this guard's entries while it has
// some on the board, and stops it when it has none left. Called in the
// event loop after each write; the watch itself is started and stopped on
// the held worker (heldWatch).
func (g *Guard) keepWatching(c transport.Ctl) {
	hb := &g.heldBoard
	want := len(hb.ids) > 0 && !g.closed
	if want == hb.watching {
		return
	}
	hb.watching = want
	if !want {
		g.heldOps.do(c, func() func() { g.heldWatch.end(); return nil })
		return
	}
	board, prefix, post := g.cfg.Held, hb.prefix, posterOf(c)
	if post == nil {
		return // offline: nobody else writes requests
	}
	g.heldOps.do(c, func() func() {
		stop, err := board.Watch(prefix, func(st held.Stored) {
			if r := st.Entry.Request; r != nil {
				post(func() { g.operatorRequest(c, st.ID, *r) })
			}
		})
		if err != nil {
			g.log.Debug("held prompts not watched; requests are read at the next refresh", "err", err)
			return func() { hb.watching = false } // the next write tries again
		}
		g.heldWatch.set(stop)
		return nil
	})
}

// heldWatch owns the running watch's stop. It is set and ended on the
// held worker, and closed by Guard.Close: a watch started after Close is
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

// heldNamespace is the namespace of the board's entries: the circuits'.
func (g *Guard) heldNamespace() string {
	if g.cfg.CircuitNamespace == "" {
		return circuit.DefaultNamespace
	}
	return g.cfg.CircuitNamespace
}

// processID names this guard across processes and machines
// (host/pid/guard), the prefix of its lease holders.
func (g *Guard) processID() string {
	if g.cfg.CircuitHolder != "" {
		return g.cfg.CircuitHolder
	}
	if g.circID == "" {
		g.circID = NewCircuitHolder()
	}
	return g.circID
}

// hostName is this machine's name, bounded.
var hostName = func() string {
	h, _ := os.Hostname()
	if len(h) > 64 {
		h = h[:64]
	}
	return h
}()
