package guard

import (
	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// prompt is one client session/prompt and its recovery: the original
// attempt and any retries the guard sends on its behalf. Its state moves
// only through machine.transit; it is answered exactly once, through
// recovery.respond (transport.Ctl.Reply enforces it on the wire).
type prompt struct {
	client  *transport.Request
	session string
	params  []byte
	first   *observers.Turn // the client's own attempt
	turn    *observers.Turn // the current attempt
	state   state
	epoch   uint64 // bumped by every transition: its state fence (fence.go)
	attempt int    // 0: the client's own; 1..: the guard's retries
	// agentRetries sums the agent's own visible retries over the attempts
	// before the current one.
	agentRetries int
	route        policy.Route
	tried        []string // models tried in this route
	model        string   // model switched to by fallback ("" if none)
	maxRetries   int
	suppressed   int
	stop         func() bool // the armed timer, if any
	decisions    []policy.Decision
	reported     bool
	last         *failure   // the latest failure, answered if recovery stops
	mark         mark       // the turn's evidence when the current wait began
	late         lateFlags  // what the gate saw while the turn was held
	note         annotation // what a successful result gains under _meta.acpGuard (silent.go)
	stall        stallWatch // the stall watchdog's measure (stall.go)

	// compaction is the prompt's one compaction, once started (compact.go).
	compaction *compaction

	// circ is the prompt's part in the shared circuits (circuit.go).
	circ promptCircuit

	// hold is the prompt's part in the held-prompt board (held.go);
	// stoppedBy who stopped it with an action, if one did (operator.go).
	hold      promptHold
	stoppedBy string
}

func (p *prompt) stopTimer() {
	if p.stop != nil {
		p.stop()
		p.stop = nil
	}
}

// failure is a failed attempt, ready to be answered.
type failure struct {
	verdict   classify.Verdict
	source    classify.Source
	msg       *transport.Msg  // a copy of the agent's response (annotated), nil for a rewrite
	rpc       *rpcErrorObject // its error, parsed once (spans in msg)
	rewrite   string          // the constant diagnostic of a control-chunk projection
	signature *observers.ControlSignature
	excerpt   string // the control chunk's suffix, the error line's body, the note (untrusted; sanitized on use)
	turn      *observers.Turn
	notesOnly bool // the turn showed only the agent's retry notes: no error followed them (textreport.go)
}

// settle handles a session/prompt response m, parsed as r, for p's
// current attempt. own is true for the client's own attempt: its frame is
// the one being handled, forwarded when it passes unchanged.
func (rc *recovery) settle(c transport.Ctl, p *prompt, m *transport.Msg, r *reply, own bool) transport.Verdict {
	if !p.state.inFlight() {
		return transport.Drop // the prompt was answered meanwhile (agent exit, late activity)
	}
	t := p.turn
	p.suppressed += t.Evidence.Suppressed
	stopReason := r.stopReason
	current := rc.tracker.Current(t)
	rc.tracker.Return(t, stopReason)
	// The turn's candidate error line is decided first: a failure report
	// (only for end_turn results) or output. An error line before the
	// agent's own JSON-RPC error is a diagnostic of it.
	line := rc.checks.settleErrorLine(c, t, stopReason)
	if p.state == stStalled {
		return rc.wd.giveUp(c, p) // the answer to the watchdog's cancel: too late
	}
	switch {
	case !current && own:
		// A response for an older generation: forwarded as it is.
		return rc.pass(c, p, m, r, own, TurnReport{Outcome: OutcomePassed, StopReason: stopReason})
	case r.err == nil:
		return rc.settleResult(c, p, m, r, line, own)
	case t.Evidence.Cancelled:
		// A cancelled turn is never rewritten or recovered.
		return rc.pass(c, p, m, r, own, TurnReport{Outcome: OutcomePassed, Error: r.err.rpc()})
	}
	return rc.fail(c, p, rc.checks.rpcFailure(c, t, m, r.err), own)
}

// settleResult handles a successful session/prompt result: a pending
// control-chunk marker, an error line (line) or a turn of nothing but
// retry notes turns it into a failure; a retry that produced nothing at
// all is not a recovery.
func (rc *recovery) settleResult(c transport.Ctl, p *prompt, m *transport.Msg, r *reply, line *failure, own bool) transport.Verdict {
	t, stopReason := p.turn, r.stopReason
	if t.Marker != nil && !t.Evidence.Cancelled && stopReason != string(acp.StopReasonCancelled) {
		return rc.fail(c, p, rc.checks.markerFailure(c, t), own)
	}
	if line == nil {
		line = rc.checks.notesFailure(c, t, stopReason)
	}
	if line != nil {
		return rc.fail(c, p, line, own)
	}
	if p.state == stProbing && stopReason == string(acp.StopReasonCancelled) {
		// A cancelled probe proves nothing about the provider: it passes,
		// and its lease is released (probing --pass--> answered).
		return rc.pass(c, p, m, r, own, TurnReport{Outcome: OutcomeRetried, StopReason: stopReason})
	}
	if p.state.retry() && p.last != nil && emptyTurn(t) && stopReason == string(acp.StopReasonEndTurn) {
		// Some agents answer a re-sent prompt at once with a stale, empty
		// end_turn (claude-agent-acp 0.23.1 after an error). Report the
		// failure it was meant to recover from instead of an empty success.
		return rc.stopWith(c, p, onStop, ReasonEmptyRetry, own)
	}
	p.note = rc.checks.annotate(c, p, r)
	if f := rc.checks.emptyFailure(c, p); f != nil {
		return rc.fail(c, p, f, own)
	}
	if p.state.retry() {
		rc.m.transit(c, p, step{on: onSucceed, d: policy.Decision{Action: "none", Reason: "succeeded"}}, nil)
		return rc.answerWith(c, p, m, r, own, TurnReport{Outcome: OutcomeRetried, StopReason: stopReason})
	}
	return rc.pass(c, p, m, r, own, TurnReport{Outcome: OutcomePassed, StopReason: stopReason})
}

// emptyTurn reports whether a turn showed nothing at all.
func emptyTurn(t *observers.Turn) bool {
	e := t.Evidence
	return !e.AssistantOutput && !e.Thoughts && !e.ToolActivity && e.ToolUpdates == 0 && e.Effects == 0
}
