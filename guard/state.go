package guard

import (
	"fmt"

	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// state is where one client session/prompt stands in its recovery (spec
// 000, "State machine"; the table is in doc.go and in [transitions]).
type state uint8

const (
	stActive          state = iota // the client's own attempt is in flight
	stWaitingForReset              // a wait for a validated reset hint is scheduled
	stRetryWait                    // a delayed retry is scheduled
	stRetrying                     // a retry the guard sent is in flight
	stSwitching                    // a model switch is scheduled or in flight
	stCompacting                   // the agent's compaction command is scheduled or in flight (compact.go)
	stActionRequired               // recovery stopped; the client got the one ProviderError
	stAnswered                     // the client got its one answer (or nobody is left to take it)
	stParked                       // the wait ended, but the shared circuit said wait on (circuit.go)
	stProbing                      // a retry in flight as the shared circuit's one probe, holding its lease (circuit.go)
	nStates
)

var stateNames = [nStates]string{"active", "waiting_for_reset", "retry_wait", "retrying", "switching", "compacting", "action_required", "answered",
	"parked", "probing"}

func (s state) String() string {
	if s < nStates {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// waiting reports whether s holds the turn between a failure and the
// dispatch of the work it scheduled: the states the late-activity gate
// guards.
func (s state) waiting() bool {
	return s == stWaitingForReset || s == stRetryWait || s == stParked || s == stSwitching || s == stCompacting
}

// running reports whether an attempt of the prompt is in flight: the
// client's own or a retry (an ordinary one or the circuit's probe).
func (s state) running() bool { return s == stActive || s == stRetrying || s == stProbing }

// retry reports whether a retry the guard sent is in flight.
func (s state) retry() bool { return s == stRetrying || s == stProbing }

// event is what moves a prompt from one state to the next.
type event uint8

const (
	onWait         event = iota // a replay-safe failure; a reset wait is allowed
	onRetry                     // a replay-safe failure; retry budget left
	onSkip                      // budget spent, on_exhausted skip, a model left
	onStop                      // stop, unsafe, unclassified, request class, exhausted, no fallback
	onPass                      // the agent's answer goes to the client (success, cancelled turn, stale generation)
	onSucceed                   // a retry succeeded
	onDue                       // the wait's deadline passed, generation current
	onSwitched                  // the agent accepted the model switch
	onSwitchFailed              // the agent refused the model switch
	onLate                      // late activity for the session while waiting
	onCancel                    // the client's session/cancel while waiting
	onSuperseded                // a new client prompt in the session while waiting
	onUnwritable                // the attempt record of scheduled work could not be written
	onAgentExit                 // the agent exited before the prompt was answered
	onEnded                     // the session ended (transcript over) with the prompt pending
	onShutdown                  // acp-guard is shutting down on a signal while the prompt is held
	onCompact                   // a replay-safe context overflow; compaction allowed and offered
	onCompacted                 // the compaction turn ended well; the retry goes out
	onCompactFail               // the compaction turn failed, ended empty or did more than compact
	onStall                     // the stall watchdog's grace period ended (stall.go)
	onPark                      // the circuit says wait on: a cooldown, another's probe, the release jitter (circuit.go)
	onProbe                     // the circuit granted its probe lease: the retry goes out as the probe
	onProgress                  // the probe's turn showed provider progress: the circuit closed
	onCircuitOpen               // the circuit's cooldown ends beyond what the prompt may still wait
	onNoCandidate               // every fallback model left is cooling down
	nEvents
)

var eventNames = [nEvents]string{"wait", "retry", "skip", "stop", "pass", "succeed", "due", "switched",
	"switch_failed", "late_activity", "cancel", "superseded", "state_unwritable", "agent_exit", "session_ended", "shutting_down",
	"compact", "compacted", "compaction_failed", "stall", "park", "probe", "progress", "circuit_open", "no_candidate"}

func (e event) String() string {
	if e < nEvents {
		return eventNames[e]
	}
	return fmt.Sprintf("event(%d)", uint8(e))
}

// decides reports whether the event's decision is one of the prompt's
// recovery decisions (reported as the turn's decision), rather than an
// outcome recorded in the attempt log only.
func (e event) decides() bool {
	switch e {
	case onWait, onRetry, onSkip, onStop, onSwitchFailed, onLate, onSuperseded, onUnwritable, onShutdown, onCompact, onCompactFail, onStall, onCircuitOpen, onNoCandidate:
		return true
	}
	return false
}

// edge is one row of the transition table. persist names the attempt-log
// outcome written on the transition ("" for none); schedules marks the
// transitions whose work (a timer, a model switch) may only start once
// that record is durable; lease says what leaving probing does with the
// circuit's probe lease (circuit.go, settleLease).
type edge struct {
	from, to  state
	on        event
	persist   policy.AttemptOutcome
	schedules bool
	lease     leaseEffect
}

// leaseEffect is what a transition out of probing does with the probe
// lease. Only rows from probing have one; nothing else holds a lease.
type leaseEffect uint8

const (
	leaseKept     leaseEffect = iota // not leaving probing
	leaseClose                       // Progress: provider progress proves the outage over
	leaseReported                    // the failure went to the circuit (Fail hands the lease on); else Release
	leaseReleased                    // Release: the probe ended without an outcome
)

var leaseNames = [...]string{"", "circuit closed", "failure reported to the circuit", "lease released"}

func (l leaseEffect) String() string { return leaseNames[l] }

// transitions is the recovery state machine, the code's copy of the table
// in doc.go (TestTransitionTableMatchesDoc keeps the two equal). A
// transition that is not here is refused.
var transitions = func() []edge {
	var t []edge
	add := func(from []state, on event, to state, persist policy.AttemptOutcome, schedules bool) {
		for _, f := range from {
			t = append(t, edge{from: f, to: to, on: on, persist: persist, schedules: schedules})
		}
	}
	running := []state{stActive, stRetrying}
	waits := []state{stWaitingForReset, stRetryWait}
	held := []state{stWaitingForReset, stRetryWait, stParked, stSwitching, stCompacting}
	live := []state{stActive, stRetrying, stWaitingForReset, stRetryWait, stParked, stSwitching, stCompacting}
	add(running, onWait, stWaitingForReset, policy.AttemptScheduled, true)
	add(running, onRetry, stRetryWait, policy.AttemptScheduled, true)
	add(running, onSkip, stSwitching, policy.AttemptFailed, true)
	add(running, onStop, stActionRequired, policy.AttemptStopped, false)
	add(running, onPass, stAnswered, "", false)
	add(running, onCompact, stCompacting, policy.AttemptScheduled, true)
	add([]state{stRetrying}, onSucceed, stAnswered, policy.AttemptSucceeded, false)
	add(append(waits, stParked), onDue, stRetrying, "", false)
	add([]state{stSwitching}, onSwitched, stRetrying, "", false)
	add([]state{stSwitching}, onSwitchFailed, stActionRequired, policy.AttemptStopped, false)
	add([]state{stCompacting}, onCompacted, stRetrying, "", false)
	add([]state{stCompacting}, onCompactFail, stActionRequired, policy.AttemptStopped, false)
	add(held, onLate, stActionRequired, policy.AttemptStopped, false)
	add(held, onCancel, stAnswered, policy.AttemptCancelled, false)
	add(held, onSuperseded, stActionRequired, policy.AttemptStopped, false)
	add(held, onUnwritable, stActionRequired, policy.AttemptStopped, false)
	add(held, onShutdown, stActionRequired, policy.AttemptStopped, false)
	add(live, onAgentExit, stActionRequired, policy.AttemptStopped, false)
	add(live, onEnded, stAnswered, "", false)
	add(running, onStall, stActionRequired, policy.AttemptStopped, false)
	// Shared circuits (circuit.go): a held prompt about to dispatch (its
	// wait ended, or the agent accepted a model switch) asks the circuit.
	asking := []state{stWaitingForReset, stRetryWait, stParked, stSwitching}
	add(asking, onPark, stParked, "", false)
	add(asking, onProbe, stProbing, "", false)
	add(asking, onCircuitOpen, stActionRequired, policy.AttemptStopped, false)
	add([]state{stSwitching}, onNoCandidate, stActionRequired, policy.AttemptStopped, false)
	// The probe: a retry like any other, except that leaving it settles
	// the circuit's probe lease (the row's lease effect).
	probe := func(on event, to state, persist policy.AttemptOutcome, schedules bool, l leaseEffect) {
		t = append(t, edge{from: stProbing, to: to, on: on, persist: persist, schedules: schedules, lease: l})
	}
	probe(onProgress, stRetrying, "", false, leaseClose)
	probe(onSucceed, stAnswered, policy.AttemptSucceeded, false, leaseClose)
	probe(onWait, stWaitingForReset, policy.AttemptScheduled, true, leaseReported)
	probe(onRetry, stRetryWait, policy.AttemptScheduled, true, leaseReported)
	probe(onSkip, stSwitching, policy.AttemptFailed, true, leaseReported)
	probe(onCompact, stCompacting, policy.AttemptScheduled, true, leaseReported)
	probe(onStop, stActionRequired, policy.AttemptStopped, false, leaseReported)
	probe(onPass, stAnswered, "", false, leaseReleased)
	probe(onStall, stActionRequired, policy.AttemptStopped, false, leaseReleased)
	probe(onAgentExit, stActionRequired, policy.AttemptStopped, false, leaseReleased)
	probe(onEnded, stAnswered, "", false, leaseReleased)
	return t
}()

// edgeIndex finds a row by (from, on).
var edgeIndex = func() map[[2]uint8]edge {
	m := make(map[[2]uint8]edge, len(transitions))
	for _, e := range transitions {
		k := [2]uint8{uint8(e.from), uint8(e.on)}
		if _, dup := m[k]; dup {
			panic(fmt.Sprintf("guard: transition %s --%s--> defined twice", e.from, e.on))
		}
		m[k] = e
	}
	return m
}()

// lookupEdge returns the row for (from, on), if the table has one.
func lookupEdge(from state, on event) (edge, bool) {
	e, ok := edgeIndex[[2]uint8{uint8(from), uint8(on)}]
	return e, ok
}

// step is one transition's payload: the failure it is about (nil: the
// prompt's latest) and the decision recorded with it.
type step struct {
	on event
	f  *failure
	d  policy.Decision
}

// transit is the one transition function. It refuses (logs and reports
// false, changing nothing) a transition that is not in the table.
// Otherwise it settles the circuit's probe lease when the row leaves
// probing, moves p, invalidates every callback armed in the previous
// state (timers and record completions check p.epoch), records the
// decision, and writes the attempt record when the row says so. For a
// row that schedules work, then runs once the record is durable (at once
// when there is no attempt log); a record that cannot be written moves
// the prompt to action_required with reason state_unwritable instead.
func (g *Guard) transit(c transport.Ctl, p *prompt, s step, then func()) bool {
	e, ok := lookupEdge(p.state, s.on)
	if !ok {
		g.log.Error("recovery transition refused", "session", p.session, "id", string(p.client.ID), "state", p.state.String(), "event", s.on.String())
		return false
	}
	if e.lease != leaseKept {
		g.settleLease(c, p, e.lease, s)
	}
	g.enter(p, e, s)
	g.log.Info("recovery transition", "session", p.session, "id", string(p.client.ID), "from", e.from.String(),
		"event", s.on.String(), "to", e.to.String(), "reason", s.d.Reason, "delay", s.d.Delay)
	if e.persist == "" || !e.schedules {
		if e.persist != "" {
			g.journal.append(c, g.record(c, p, s, e.persist), nil)
		}
		if then != nil {
			then()
		}
		return true
	}
	g.journal.append(c, g.record(c, p, s, e.persist), g.afterRecord(c, p, then))
	return true
}

// enter moves p along e: the held count, the epoch that invalidates every
// callback armed in the previous state, the timer, the failure and
// decision, and the evidence mark a held turn is compared against.
func (g *Guard) enter(p *prompt, e edge, s step) {
	if p.state.waiting() {
		g.waiting--
	}
	if e.to.waiting() {
		g.waiting++
	}
	if p.state == stProbing {
		g.probes--
	}
	if e.to == stProbing {
		g.probes++
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
// the work, unless the prompt moved on meanwhile (late activity, a cancel)
// or the record could not be written (then recovery stops, fail closed).
func (g *Guard) afterRecord(c transport.Ctl, p *prompt, then func()) func(error) {
	epoch := p.epoch
	return func(err error) {
		switch {
		case p.epoch != epoch:
		case err != nil:
			g.log.Error("attempt log unwritable; recovery stopped", "err", err)
			g.stopWith(c, p, onUnwritable, ReasonStateUnwritable, false)
		case g.closed:
			// Nobody is left to answer; the agent's exit ends the prompt.
		default:
			then()
		}
	}
}

// record builds the attempt-log record of a transition.
func (g *Guard) record(c transport.Ctl, p *prompt, s step, outcome policy.AttemptOutcome) policy.Record {
	d := s.d
	if d.Action == "" {
		d = policy.Decision{Action: policy.ActionStop, Reason: s.on.String()}
	}
	rec := policy.Record{
		Time: c.Now().UTC(), SessionID: p.session, RequestID: string(p.client.ID),
		Generation: p.turn.Generation, Attempt: p.attempt, Model: g.modelOf(p), Decision: d, Policy: g.cfg.Policy, Outcome: outcome,
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
