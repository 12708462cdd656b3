package transport

import (
	"runtime"
	"slices"
	"time"
)

// The pass-through fast path (ARCHITECTURE.md, "The pass-through fast
// path", argues it): a batch of agent frames that the hooks need neither
// to rewrite, hold, drop nor answer — notifications and agent requests
// the hooks' PassThrough accepts — is queued for the client by the agent
// stdout reader without taking the loop's lock, and written by that
// reader at once. The hooks still see every such frame, in read order,
// with the stamp of its read: the batch waits in the loop's pending list
// until the reader, right after writing it, observes it (catchUp) — or,
// when an event came in between, until that event has, before its own
// work.
//
// The lane is what makes that exact. It is an atomic word with three
// states: closed (an event holds the loop's lock, or the session is
// over), open (nothing runs: the reader may enter) and busy (the reader
// is in its section). The reader only ever tries to enter (open → busy);
// when it cannot, it takes the ordinary road. An event closes the lane
// right after taking the lock, waiting for a busy reader to leave (a
// section writes to no peer: it queues a batch, asking PassThrough, or it
// observes one already written — AgentMsg and the tap, whose transcript
// and logs are written there as under the lock), observes the pending
// frames, handles itself, and opens the lane again before it
// releases the lock. Sections and events therefore never overlap: each
// fast batch is linearized between two events, its frames are queued on
// the client's writer in that order, and the next event observes them
// before doing anything of its own — as if the reader had handled them
// under the lock just before that event.

// PassHooks is an optional extension of Hooks: the fast path for agent
// frames. PassThrough runs on the agent stdout reader, serialized with
// every other hook call (the lane), for a notification or an agent request
// that the relay itself passes unchanged. It returns true only when
// AgentMsg, called for m at the next event with every frame the fast path
// queued before it, will return Forward and write nothing, whatever that
// event's own outcome: the frame is then written first and shown to
// AgentMsg later, in order. It must not keep m, nor change any state.
type PassHooks interface {
	PassThrough(m *Msg) bool
}

// plainPass is a plain relay's PassThrough (NopHooks itself, not a
// type that embeds it and may observe): everything the relay may pass.
type plainPass struct{}

func (plainPass) PassThrough(*Msg) bool { return true }

// passHooks returns the hooks' PassThrough, nil when they have none.
func passHooks(h Hooks) PassHooks {
	switch h := h.(type) {
	case NopHooks:
		return plainPass{}
	case PassHooks:
		return h
	}
	return nil
}

const (
	laneClosed int32 = iota
	laneOpen
	laneBusy
)

// Bounds of the fast path: a batch of more lines goes the ordinary road
// (a read of 256 KiB of the smallest chunk frames, 161 bytes, is 1,600
// lines: the reader's section, and an event's wait for it, stay about as
// long as the ordinary road's hold of the lock for the same batch). At
// most one batch waits to be observed — the reader observes it before it
// reads again, or an event did — so fastMaxPending only guards that
// bound: past it the reader would take the ordinary road, whose event
// observes what waits.
const (
	fastMaxLines   = 4096
	fastMaxPending = 4
)

// pendingBatch is a batch written on the fast path, waiting for its
// observation, and the stamp of its read.
type pendingBatch struct {
	b    *batch
	at   time.Time
	msgs []Msg // its frames as parsed, or nil: parse them again
}

// passAgent tries the fast path for a batch the agent's stdout reader
// read; false: nothing was done, and the batch takes the ordinary road.
// On true the batch is queued for the client and written (by this
// goroutine unless another one is writing to the client already), and
// released once written and observed.
func (l *loop) passAgent(b *batch) bool {
	if l.pass == nil || b.big != nil || len(b.lines) == 0 || len(b.lines) > fastMaxLines {
		return false
	}
	if !l.lane.CompareAndSwap(laneOpen, laneBusy) {
		return false
	}
	// The section: the loop's state is this goroutine's until the lane
	// opens again (no event runs).
	if len(l.pend) >= fastMaxPending || l.toClient.failed.Load() {
		l.lane.Store(laneOpen)
		return false
	}
	// The frames are parsed once, into the scratch slice, which is this
	// batch's until it is observed (were another batch still waiting,
	// they would be parsed again when observed).
	keep := len(l.pend) == 0
	if keep {
		l.passMsgs = slices.Grow(l.passMsgs[:0], len(b.lines))[:len(b.lines)]
	}
	var chunks [][]byte
	for i, ln := range b.lines {
		m := &l.passMsg
		if keep {
			m = &l.passMsgs[i]
		}
		if !l.relay.passAgent(ln, m, l.pass) {
			l.lane.Store(laneOpen)
			return false
		}
		chunks = appendChunk(chunks, ln.Bytes)
	}
	var msgs []Msg
	if keep {
		msgs = l.passMsgs
	}
	at := time.Now()
	if at.Before(l.now) {
		at = l.now
	}
	b.refs.Store(2) // released once written and once observed
	l.pend = append(l.pend, pendingBatch{b: b, at: at, msgs: msgs})
	l.toClient.enqueue(item{chunks: chunks, release: b})
	l.lane.Store(laneOpen)
	l.toClient.drain()
	// Now the hooks see the batch, on this goroutine, unless an event has
	// closed the lane meanwhile: that event observes it before anything
	// else (closeLane). If the lane is open, either no event ran since the
	// batch's section — observing it now is as if it had been observed
	// there — or one did and observed it, and nothing is left.
	if l.lane.CompareAndSwap(laneOpen, laneBusy) {
		l.catchUp()
		l.lane.Store(laneOpen)
	}
	return true
}

// closeLane closes the lane, under the loop's lock, waiting for a reader
// in a section to leave it (a section writes to no peer: it queues a
// batch, or observes one); then it observes what the fast path queued and
// nobody observed yet.
func (l *loop) closeLane() {
	for !l.lane.CompareAndSwap(laneOpen, laneClosed) {
		if l.lane.Load() == laneClosed {
			break // not opened yet, or the session is over
		}
		runtime.Gosched() // the reader's section is short and never waits for a peer
	}
	l.catchUp()
}

// catchUp shows the hooks every frame the fast path wrote and nobody
// observed yet, in read order, each batch at the stamp of its read (never
// earlier than the last event's: stamps do not go back). It runs under
// the lock with the lane closed, or in the reader's lane section.
func (l *loop) catchUp() {
	for i, p := range l.pend {
		if p.at.After(l.now) {
			l.now = p.at
		}
		if l.stampTap != nil {
			l.stampTap.Stamp(l.now)
		}
		for j, ln := range p.b.lines {
			var m *Msg
			if p.msgs != nil {
				m = &p.msgs[j]
			}
			l.relay.passedAgent(ln, m)
		}
		p.b.release()
		l.pend[i] = pendingBatch{}
	}
	l.pend = l.pend[:0]
}

// openLane opens the lane before the loop's lock is released, unless the
// session is over.
func (l *loop) openLane() {
	if l.pass != nil && !l.over {
		l.lane.Store(laneOpen)
	}
}

// passAgent reports whether the agent's line may take the fast path: a
// whole frame that the relay passes unchanged whatever its state — a
// notification, or a request (its table entry is made when it is
// observed, before any event, so before the client can answer it) — and
// that the hooks accept. m is the caller's scratch Msg.
func (r *Relay) passAgent(l Line, m *Msg, h PassHooks) bool {
	if l.oversize > 0 || !endsLine(l.Bytes) {
		return false
	}
	m.parse(l.Bytes)
	if m.Kind != KindNotification && m.Kind != KindRequest {
		return false
	}
	return h.PassThrough(m)
}

// passedAgent is FromAgent for a line the fast path already wrote (m: the
// line as parsed then, or nil): the request table, the hooks and the tap
// see it as they would have, and nothing is written. PassThrough promised
// a Forward; a hook that decides otherwise now cannot take the frame back,
// which is logged.
func (r *Relay) passedAgent(l Line, m *Msg) {
	r.Counts.AgentFrames++
	r.Counts.Passed++
	if m == nil {
		r.msg.parse(l.Bytes)
		m = &r.msg
	}
	var req *Request
	if m.Kind == KindRequest {
		var dup bool
		req, dup = r.table.add(FromAgent, m, r.out.Now(), nil)
		if dup {
			r.log.Warn("agent reused the id of a pending request", "method", m.Method, "id", string(m.ID))
		}
	}
	if v := r.hooks.AgentMsg(r, m, req); v != Forward {
		r.Counts.PassMisjudged++
		r.log.Error("a frame written on the fast path was not to be forwarded (PassThrough misjudged it)", "method", m.Method)
	}
	r.tapIn(A2C, l.Bytes, false)
}
