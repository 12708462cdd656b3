package guard

import (
	"fmt"

	"github.com/acp-guard/acp-guard/policy"
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
	stStalled                      // the stall watchdog sent session/cancel; its grace period runs (stall.go)
	nStates
)

// stateTraits are what the rest of the guard asks of a state. A state is
// one constant above plus one row of [states]; the predicates below read
// the row, so a new state says what it is in one place.
type stateTraits uint8

const (
	holds      stateTraits = 1 << iota // holds the turn between a failure and the dispatch of its work: the late-activity gate guards it
	actionable                         // held until a moment comes (a wait's deadline, the circuit's word): an action may end it early (operator.go)
	timed                              // a wait the policy decided, on its own timer (the wait telemetry measures)
	runs                               // an attempt (the client's own or a retry) is in flight
	answers                            // waits for an attempt's answer (running, or stalled)
	retries                            // a retry the guard sent is in flight
	final                              // the prompt got (or is getting) its one answer
)

// stateDesc is one state's row: its name (in events, the attempt log, the
// held-prompt board and the table in doc.go) and its traits.
type stateDesc struct {
	name   string
	traits stateTraits
}

// states is the one declaration of what each state is
// (TestStateAndEventRows fails when a state lacks its row).
var states = [nStates]stateDesc{
	stActive:          {"active", runs | answers},
	stWaitingForReset: {"waiting_for_reset", holds | actionable | timed},
	stRetryWait:       {"retry_wait", holds | actionable | timed},
	stRetrying:        {"retrying", runs | answers | retries},
	stSwitching:       {"switching", holds},
	stCompacting:      {"compacting", holds},
	stActionRequired:  {"action_required", final},
	stAnswered:        {"answered", final},
	stParked:          {"parked", holds | actionable},
	stProbing:         {"probing", runs | answers | retries},
	stStalled:         {"stalled", answers},
}

func (s state) String() string {
	if s < nStates {
		return states[s].name
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

func (s state) is(t stateTraits) bool { return s < nStates && states[s].traits&t != 0 }

// waiting reports whether s holds the turn between a failure and the
// dispatch of the work it scheduled: the states the late-activity gate
// guards.
func (s state) waiting() bool { return s.is(holds) }

// actionable reports whether s holds the turn until a moment comes — a
// wait's deadline, the circuit's word — so that an action may end the
// hold early (operator.go): retry now, skip to the next model, stop.
func (s state) actionable() bool { return s.is(actionable) }

// running reports whether an attempt of the prompt is in flight: the
// client's own or a retry (an ordinary one or the circuit's probe).
func (s state) running() bool { return s.is(runs) }

// inFlight reports whether the prompt waits for an attempt's answer:
// running, or stalled (an answer now comes too late, and settles it
// agent_stalled).
func (s state) inFlight() bool { return s.is(answers) }

// terminal reports whether the prompt got (or is getting) its one answer.
func (s state) terminal() bool { return s.is(final) }

// retry reports whether a retry the guard sent is in flight.
func (s state) retry() bool { return s.is(retries) }

// StateTraits is what a state name (an event's From or To) says to a
// subscriber, read from the guard's one declaration of its states.
type StateTraits struct {
	Known      bool // a state of the guard's
	Timed      bool // a wait the policy decided (waiting_for_reset, retry_wait), on its own timer
	Actionable bool // held until a moment comes; actions may end it early (held prompts)
	Retry      bool // a retry the guard sent is in flight
	Terminal   bool // the prompt got (or is getting) its one answer
}

// DescribeState returns the traits of the state named name (the zero
// StateTraits for a name that is not a state).
func DescribeState(name string) StateTraits {
	for i, d := range states {
		if d.name == name {
			s := state(i)
			return StateTraits{Known: true, Timed: s.is(timed), Actionable: s.actionable(), Retry: s.retry(), Terminal: s.terminal()}
		}
	}
	return StateTraits{}
}

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
	onStall                     // the stall watchdog saw nothing for the timeout: its session/cancel goes out (stall.go)
	onGiveUp                    // a stalled attempt's grace period ended, or its answer came after the cancel
	onPark                      // the circuit says wait on: a cooldown, another's probe, the release jitter (circuit.go)
	onProbe                     // the circuit granted its probe lease: the retry goes out as the probe
	onProgress                  // the probe's turn showed provider progress: the circuit closed
	onCircuitOpen               // the circuit's cooldown ends beyond what the prompt may still wait
	onNoCandidate               // every fallback model left is cooling down
	onRetryNow                  // an action on a held prompt: send the retry now (operator.go)
	onSkipNow                   // an action on a held prompt: switch to the next fallback model now
	onStopNow                   // an action on a held prompt: stop recovery, answer the failure now
	nEvents
)

// eventDesc is one event's row: its name (in events and the table in
// doc.go), and whether the decision it carries is one of the prompt's
// recovery decisions (reported as the turn's decision) rather than an
// outcome recorded in the attempt log only.
type eventDesc struct {
	name    string
	decides bool
}

// events is the one declaration of the events (TestStateAndEventRows
// fails when an event lacks its row).
var events = [nEvents]eventDesc{
	onWait:         {"wait", true},
	onRetry:        {"retry", true},
	onSkip:         {"skip", true},
	onStop:         {"stop", true},
	onPass:         {"pass", false},
	onSucceed:      {"succeed", false},
	onDue:          {"due", false},
	onSwitched:     {"switched", false},
	onSwitchFailed: {"switch_failed", true},
	onLate:         {"late_activity", true},
	onCancel:       {"cancel", false},
	onSuperseded:   {"superseded", true},
	onUnwritable:   {"state_unwritable", true},
	onAgentExit:    {"agent_exit", false},
	onEnded:        {"session_ended", false},
	onShutdown:     {"shutting_down", true},
	onCompact:      {"compact", true},
	onCompacted:    {"compacted", false},
	onCompactFail:  {"compaction_failed", true},
	onStall:        {"stall", false},
	onGiveUp:       {"give_up", true},
	onPark:         {"park", false},
	onProbe:        {"probe", false},
	onProgress:     {"progress", false},
	onCircuitOpen:  {"circuit_open", true},
	onNoCandidate:  {"no_candidate", true},
	onRetryNow:     {"retry_now", true},
	onSkipNow:      {"skip_now", true},
	onStopNow:      {"stop_now", true},
}

func (e event) String() string {
	if e < nEvents {
		return events[e].name
	}
	return fmt.Sprintf("event(%d)", uint8(e))
}

// decides reports whether the event's decision is one of the prompt's
// recovery decisions (reported as the turn's decision), rather than an
// outcome recorded in the attempt log only.
func (e event) decides() bool { return e < nEvents && events[e].decides }

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
	live := []state{stActive, stRetrying, stWaitingForReset, stRetryWait, stParked, stSwitching, stCompacting, stStalled}
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
	// The stall watchdog (stall.go): its cancel, then the answer.
	add(running, onStall, stStalled, "", false)
	add([]state{stStalled}, onGiveUp, stActionRequired, policy.AttemptStopped, false)
	// Shared circuits (circuit.go): a held prompt about to dispatch (its
	// wait ended, or the agent accepted a model switch) asks the circuit.
	asking := []state{stWaitingForReset, stRetryWait, stParked, stSwitching}
	add(asking, onPark, stParked, "", false)
	add(asking, onProbe, stProbing, "", false)
	add(asking, onCircuitOpen, stActionRequired, policy.AttemptStopped, false)
	add([]state{stSwitching}, onNoCandidate, stActionRequired, policy.AttemptStopped, false)
	// Actions on a held prompt (operator.go): the client's
	// _acp-guard/recovery request or an operator's `acp-guard held`. The
	// gate still decides: retry_now and skip_now are refused unless the
	// held turn is still replay-safe and current.
	actionable := []state{stWaitingForReset, stRetryWait, stParked}
	add(actionable, onRetryNow, stRetrying, policy.AttemptScheduled, true)
	add(actionable, onSkipNow, stSwitching, policy.AttemptScheduled, true)
	add(actionable, onStopNow, stActionRequired, policy.AttemptStopped, false)
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
	probe(onStall, stStalled, "", false, leaseReleased)
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
