package guard

import (
	"log/slog"

	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// machine is the recovery state machine (the table in doc.go and
// state.go): it owns the client prompts in flight and their states.
// transit is the only code that changes a state; each transition arms
// the prompt's fences (fence.go), the one check every timer and callback
// armed for the prompt passes. The machine also keeps what the hot path
// tests without walking the prompts (how many are held, how many probe),
// and whether the client is gone.
type machine struct {
	prompts map[*transport.Request]*prompt
	waiting int  // prompts in a held state (state.waiting)
	probes  int  // prompts holding a probe lease (probing)
	closed  bool // the client's input ended: nobody is left to answer

	doc policy.Document // written with each attempt record
	jr  *journal
	log *slog.Logger
	ev  *emitter
	ag  *agent

	// What a transition also moves: the circuit's probe lease, the
	// prompt's hold on the board, and (for an unwritable record) the
	// recovery, which then stops.
	circ  *circuitClient
	board *board
	rec   *recovery
}

// step is one transition's payload: the failure it is about (nil: the
// prompt's latest) and the decision recorded with it.
type step struct {
	on event
	f  *failure
	d  policy.Decision
	by string // who asked for an action on a held prompt ("client", "operator")
}

// add starts the bookkeeping of a new client prompt.
func (m *machine) add(p *prompt) { m.prompts[p.client] = p }

// forget ends the bookkeeping of an answered prompt.
func (m *machine) forget(p *prompt) { delete(m.prompts, p.client) }

// transit is the one transition function. It refuses (logs and reports
// false, changing nothing) a transition that is not in the table.
// Otherwise it settles the circuit's probe lease when the row leaves
// probing, moves p — which arms p's fences anew: every callback armed in
// the previous state is dropped (fence.go) —, follows the hold on the
// board, records the decision, and writes the attempt record when the
// row says so. For a row that schedules work, then runs once the record
// is durable (at once when there is no attempt log); a record that cannot
// be written moves the prompt to action_required with reason
// state_unwritable instead.
func (m *machine) transit(c transport.Ctl, p *prompt, s step, then func()) bool {
	e, ok := lookupEdge(p.state, s.on)
	if !ok {
		m.log.Error("recovery transition refused", "session", p.session, "id", string(p.client.ID), "state", p.state.String(), "event", s.on.String())
		return false
	}
	if e.lease != leaseKept {
		m.circ.settleLease(c, p, e.lease, s)
	}
	if e.from == stRetrying {
		m.circ.retriedNowEnded(c, p, s.on)
	}
	m.enter(p, e, s)
	if m.ev.on() {
		m.ev.emit(Transition{EventBase: m.ev.base(c, p), From: e.from.String(), On: s.on.String(), To: e.to.String(),
			Attempt: p.attempt, Decision: decisionOf(s.d), Recorded: string(e.persist), By: s.by})
	}
	m.board.holdMoved(c, p, e, s)
	if e.persist == "" || !e.schedules {
		if e.persist != "" {
			m.jr.append(c, m.record(c, p, s, e.persist), nil)
		}
		if then != nil {
			then()
		}
		return true
	}
	m.jr.append(c, m.record(c, p, s, e.persist), m.afterRecord(c, p, then))
	return true
}

// enter moves p along e: the held and probe counts, the epoch (p's state
// fence: every callback armed in the previous state is dropped), the
// state's timer, the failure and decision, and the evidence mark a held
// turn is compared against.
func (m *machine) enter(p *prompt, e edge, s step) {
	if p.state.waiting() {
		m.waiting--
	}
	if e.to.waiting() {
		m.waiting++
	}
	if p.state == stProbing {
		m.probes--
	}
	if e.to == stProbing {
		m.probes++
	}
	p.state = e.to
	p.epoch++
	p.stopTimer()
	if s.f != nil {
		p.last = s.f
	}
	if s.d.Action != "" && s.on.decides() {
		p.decisions = append(p.decisions, s.d)
	}
	if e.to.waiting() {
		p.mark = markOf(p.turn)
	}
}

// afterRecord is what runs once the record of scheduled work is written:
// the work, under the prompt's fence (late activity, a cancel: dropped) —
// unless the record could not be written: then recovery stops (fail
// closed), even when the client left meanwhile (fence.moved).
func (m *machine) afterRecord(c transport.Ctl, p *prompt, then func()) func(error) {
	f := m.fence(p)
	return func(err error) {
		switch {
		case f.moved():
		case err != nil:
			m.log.Error("attempt log unwritable; recovery stopped", "err", err)
			m.rec.stopWith(c, p, onUnwritable, ReasonStateUnwritable, false)
		default:
			f.then(then)()
		}
	}
}

// record builds the attempt-log record of a transition.
func (m *machine) record(c transport.Ctl, p *prompt, s step, outcome policy.AttemptOutcome) policy.Record {
	d := s.d
	if d.Action == "" {
		d = policy.Decision{Action: policy.ActionStop, Reason: s.on.String()}
	}
	rec := policy.Record{
		Time: c.Now().UTC(), SessionID: p.session, RequestID: string(p.client.ID),
		Generation: p.turn.Generation, Attempt: p.attempt, Model: m.ag.modelOf(p), Decision: d, Policy: m.doc, Outcome: outcome,
		By: s.by,
	}
	f := s.f
	if f == nil && outcome != policy.AttemptSucceeded {
		f = p.last
	}
	if f != nil {
		rec.Code, rec.Class, rec.Rule, rec.CatalogueVersion = f.verdict.Code, string(f.verdict.Class), f.verdict.Rule, f.verdict.CatalogueVersion
	}
	return rec
}

// held returns the prompts of a session (of every session when all) that
// are between a failure and the dispatch of its recovery, in the order
// the client sent them.
func (m *machine) held(sessionID string, all bool) []*prompt {
	if m.waiting == 0 {
		return nil
	}
	var out []*prompt
	for _, p := range m.prompts {
		if p.state.waiting() && (all || p.session == sessionID) {
			out = append(out, p)
		}
	}
	sortPrompts(out)
	return out
}

// pending returns every prompt not yet answered, in the order the client
// sent them.
func (m *machine) pending() []*prompt {
	out := make([]*prompt, 0, len(m.prompts))
	for _, p := range m.prompts {
		out = append(out, p)
	}
	sortPrompts(out)
	return out
}

// stopTimers stops every prompt's state and hold timers: the client or
// the agent is gone, and no held work may start any more.
func (m *machine) stopTimers() {
	for _, p := range m.prompts {
		p.stopTimer()
		p.hold.stopTimer()
	}
}
