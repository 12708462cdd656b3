package guard

import (
	"log/slog"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// Recovery reasons the guard adds to the policy's (recovery.reason).
const (
	ReasonLateActivity    = "late_activity"      // evidence for the session while the turn was held
	ReasonStateUnwritable = "state_unwritable"   // the attempt record of scheduled work could not be written
	ReasonEmptyRetry      = "empty_retry_result" // a retry answered with nothing at all
	ReasonSuperseded      = "superseded"         // the client sent a new prompt to the session
	ReasonSwitchFailed    = "switch_failed"      // the agent refused the model switch
	ReasonNoFallback      = "no_fallback"        // skip, but no model to switch to
	ReasonNoPolicy        = "no_policy"          // no recovery policy configured (policy.Document.Unconfigured): reported, never recovered
	ReasonSameProvider    = "same_provider_only" // skip, but the failure never authorizes a switch
	ReasonAgentExited     = "agent_exited"
	ReasonClientClosed    = "client_closed" // the agent exited after the client closed its input
	ReasonSessionEnded    = "session_ended"
	ReasonShuttingDown    = "shutting_down" // a signal to acp-guard: no new attempt starts
)

// recovery is the recovery engine: it settles each attempt of a prompt
// (prompt.go), decides what a failure gets behind the replay-safety gate
// (policy, the compaction and fallback it may lead to), schedules and
// dispatches the work, holds the turn against late activity (late.go),
// and answers the client exactly once (answer.go). It moves prompts only
// through the machine's transit; the work a state schedules belongs to
// the parts that do it (circuits, model switches, compaction, the stall
// watchdog).
type recovery struct {
	m       *machine
	doc     policy.Document
	jitter  policy.Jitter
	log     *slog.Logger
	tracker *observers.Tracker
	ag      *agent
	ev      *emitter
	checks  *checks
	circ    *circuitClient
	sw      *switcher
	comp    *compactor
	wd      *watchdog
	// noPolicy: the session runs without a recovery policy, so a failure
	// the default skips stops with ReasonNoPolicy, not ReasonNoFallback.
	noPolicy bool
}

// start begins a client session/prompt: a new turn, and the prompt that
// recovers it.
func (rc *recovery) start(c transport.Ctl, req *transport.Request) {
	rc.supersede(c, req.SessionID)
	rc.ag.closeLate(c, req.SessionID)
	rc.checks.refresh()
	t := rc.tracker.Start(req.SessionID, c.Now())
	p := &prompt{client: req, session: req.SessionID, params: req.Params, turn: t, first: t, state: stActive}
	req.Tag = p
	rc.m.add(p)
	rc.ev.turnStarted(c, p)
	rc.wd.watch(c, p)
}

// fail decides what to do about a failed attempt and moves p accordingly:
// to a wait or a switch (the work starts once its record is durable), or
// to action_required with the answer.
func (rc *recovery) fail(c transport.Ctl, p *prompt, f *failure, own bool) transport.Verdict {
	d, next := decideFor(rc, c, p, f)
	rc.ev.classified(c, p, f, d)
	rc.circ.failed(c, p, f, d)
	a := actionOf(d.Action)
	if a.start == nil {
		if !rc.m.transit(c, p, step{on: a.on, f: f, d: d}, nil) {
			return transport.Forward
		}
		return rc.answerFailure(c, p, f, d, own)
	}
	rc.m.transit(c, p, step{on: a.on, f: f, d: d}, func() { a.start(rc, c, p, f, d, next) })
	if own && c.Pending(p.client) {
		return transport.Hold // the client's request waits for the recovery's answer
	}
	return transport.Drop
}

// decideFor is how fail decides: always rc.decide, except in a test that
// adds an action no policy names (toyaction_test.go, the worked example).
var decideFor = (*recovery).decide

// decide evaluates the policy for f behind the replay-safety gate; for a
// skip it also picks the model to switch to.
func (rc *recovery) decide(c transport.Ctl, p *prompt, f *failure) (policy.Decision, string) {
	safe := f.turn.ReplaySafe() && rc.tracker.Current(f.turn) && !rc.m.closed
	cp, _ := policyFor(rc.doc, f.verdict)
	p.maxRetries = cp.Retry.MaxRetries
	pf := policy.Failure{
		Class: string(f.verdict.Class), Code: f.verdict.Code, Safe: safe,
		RetryAfter: f.verdict.RetryAfter, ResetAt: f.verdict.ResetAt, Now: c.Now(),
		DiagnosticOnly: f.notesOnly, Jitter: rc.jitter,
	}
	if rc.circ.on() {
		// A jittered retry is never due before the circuit its failure
		// opens can let it through (its least cooldown): it would park,
		// and a replay could not tell when the parked retry went out.
		pf.MinDelay = circuit.MinCooldown
	}
	if !f.notesOnly {
		pf.Diagnostic = rc.checks.noteClass(f.turn, c.Now())
	}
	d, route := policy.Evaluate(rc.doc, pf, p.route)
	p.route = route
	if cd, ok := rc.comp.decision(p, f, safe); ok {
		return cd, ""
	}
	if d.Action != policy.ActionSkip {
		return d, ""
	}
	next, ok := rc.ag.nextCandidate(p)
	switch {
	case !ok && rc.noPolicy:
		d.Action, d.Reason = policy.ActionStop, ReasonNoPolicy
	case ok && classify.SameProviderOnly(f.verdict.Code):
		d.Action, d.Reason = policy.ActionStop, ReasonSameProvider
	case !ok:
		d.Action, d.Reason = policy.ActionStop, ReasonNoFallback
	}
	return d, next
}

// policyFor is the policy a verdict is evaluated with (its class's, or
// the per-code override) and the key its budget is counted under in a
// route. A class that is not configurable gets the transient policy's
// shape for reporting only (Evaluate stops it).
func policyFor(doc policy.Document, v classify.Verdict) (policy.ClassPolicy, string) {
	if cp, key, ok := doc.PolicyFor(string(v.Class), v.Code); ok {
		return cp, key
	}
	return doc.Transient, string(v.Class)
}

// arm tells the client what happens next and starts the wait's timer; the
// deadline was fixed at the decision, so the time the record took to
// write does not lengthen the wait.
func (rc *recovery) arm(c transport.Ctl, p *prompt, f *failure, d policy.Decision, _ string) {
	rc.notice(c, p, f, d)
	delay := d.Delay
	if !d.Deadline.IsZero() {
		delay = max(d.Deadline.Sub(c.Now()), 0)
	}
	rc.armDue(c, p, delay)
}

// armDue arms p's state timer for when its wait ends (a wait's deadline,
// a parked prompt's next ask), under its fence: a cancel, late activity
// or any other transition drops it.
func (rc *recovery) armDue(c transport.Ctl, p *prompt, delay time.Duration) {
	p.stop = c.After(delay, rc.m.fence(p).then(func() {
		p.stop = nil
		if rc.dispatchable(c, p, p.turn) {
			rc.circ.dispatchDue(c, p) // asks the shared circuit first, when there is one
		}
	}))
}

// dispatchable reports whether held work may go out now that its moment
// came: the client still waits and t (the turn the work follows) is still
// the session's current one. Otherwise it ends the prompt and reports false.
func (rc *recovery) dispatchable(c transport.Ctl, p *prompt, t *observers.Turn) bool {
	if !c.Pending(p.client) {
		// Answered by the relay meanwhile: nothing is left to recover.
		rc.m.transit(c, p, step{on: onEnded}, nil)
		rc.respond(c, p, TurnReport{Outcome: OutcomeFailed}, nil)
		return false
	}
	if !rc.tracker.Current(t) {
		rc.stopWith(c, p, onSuperseded, ReasonSuperseded, false)
		return false
	}
	return true
}

// dispatchRetry sends the cached prompt again with the proxy's own id: the
// moment the held turn is released.
func (rc *recovery) dispatchRetry(c transport.Ctl, p *prompt) {
	p.attempt++
	p.agentRetries += p.turn.AgentRetries()
	p.turn = rc.tracker.Start(p.session, c.Now())
	rc.ev.attemptSent(c, p, AttemptRetry, acp.AgentMethodSessionPrompt, rc.ag.modelOf(p))
	c.Call(acp.AgentMethodSessionPrompt, p.session, p.params, p)
}

// retried settles the agent's answer to a retry of p (ProxyResponse).
func (rc *recovery) retried(c transport.Ctl, p *prompt, m *transport.Msg, rp *reply) {
	if reason, ok := rp.refused(); ok && p.last != nil && p.state.retry() {
		// The retry never reached the agent: the client gets the
		// failure it was meant to recover from.
		rc.stopWith(c, p, onStop, reason, false)
		return
	}
	rc.settle(c, p, m, rp, false)
}

// shutdown answers every prompt the guard holds (a wait, a model switch,
// a compaction) with its failure at once, reason shutting_down: acp-guard
// got a stop signal, the relay refuses new requests of the proxy's own
// from now on, and the client should not wait for a retry that will
// never be sent.
func (rc *recovery) shutdown(c transport.Ctl) {
	for _, p := range rc.m.prompts {
		if p.state.waiting() {
			rc.stopWith(c, p, onShutdown, ReasonShuttingDown, false)
		}
	}
}

// cancelWaits answers "cancelled" at once every prompt of the session the
// guard holds (a wait, or a model switch). A retry already sent to the
// agent is cancelled by the agent itself: the client's session/cancel is
// forwarded.
func (rc *recovery) cancelWaits(c transport.Ctl, sessionID string) {
	for _, p := range rc.m.held(sessionID, false) {
		if rc.m.transit(c, p, step{on: onCancel, d: policy.Decision{Action: policy.ActionStop, Reason: "cancelled"}}, nil) {
			rc.answerCancelled(c, p)
		}
	}
}

// supersede answers, with the failure being recovered, every prompt of the
// session the guard holds when the client starts a new prompt there: the
// new generation makes the old turn stale, and the old request must still
// get its one answer.
func (rc *recovery) supersede(c transport.Ctl, sessionID string) {
	for _, p := range rc.m.held(sessionID, false) {
		rc.stopWith(c, p, onSuperseded, ReasonSuperseded, false)
	}
}

// exited answers a prompt left pending when the agent exited (ExitData):
// it moves to action_required (agent_exited), and the relay writes the
// answer with the data returned.
func (rc *recovery) exited(c transport.Ctl, p *prompt, st transport.ExitStatus, base map[string]any) map[string]any {
	rc.checks.settleErrorLine(c, p.turn, "") // the text so far: a diagnostic error line, or output
	f := rc.checks.exitFailure(c, p.turn, st)
	reason := ReasonAgentExited
	held := p.state.waiting() && p.last != nil
	switch {
	case held:
		// The agent died while the guard held the prompt for recovery: the
		// failure the client is owed is the one recovery was for.
		f = p.last
	case rc.m.closed:
		// The client closed its input first: the exit is its doing.
		f, reason = rc.checks.clientClosedFailure(p.turn), ReasonClientClosed
	}
	d := policy.Decision{Action: policy.ActionStop, Reason: reason, Class: string(f.verdict.Class)}
	if !held {
		rc.ev.classified(c, p, f, d)
	}
	if !rc.m.transit(c, p, step{on: onAgentExit, f: f, d: d}, nil) {
		return nil
	}
	pe := rc.providerError(c, p, f, string(policy.ActionStop), reason)
	base["providerError"] = pe
	rc.respond(c, p, TurnReport{Outcome: OutcomeFailed, Error: &RPCError{Code: -32603, Message: "agent exited"}, ProviderError: &pe}, nil)
	return base
}
