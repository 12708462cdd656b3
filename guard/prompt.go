package guard

import (
	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/internal/jsonscan"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// prompt is one client session/prompt and its recovery: the original
// attempt and any retries the guard sends on its behalf. Its state moves
// only through Guard.transit; it is answered exactly once, through
// Guard.respond (transport.Ctl.Reply enforces it on the wire).
type prompt struct {
	client  *transport.Request
	session string
	params  []byte
	first   *observers.Turn // the client's own attempt
	turn    *observers.Turn // the current attempt
	state   state
	epoch   uint64 // bumped by every transition: fences timers, switches and record completions
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
	stall        stallWatch // the stall watchdog (stall.go)

	// compaction is the prompt's one compaction, once started (compact.go).
	compaction *compaction

	// circ is the prompt's shared-circuit state (circuit.go).
	circ promptCircuit
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
	msg       *transport.Msg // the agent's response (annotated), nil for a rewrite
	rewrite   string         // the constant diagnostic of a control-chunk projection
	signature *observers.ControlSignature
	excerpt   string // the control chunk's suffix, the error line's body, the note (untrusted; sanitized on use)
	turn      *observers.Turn
	notesOnly bool // the turn showed only the agent's retry notes: no error followed them (textreport.go)
}

// settle handles a session/prompt response for p's current attempt. own
// is true for the client's own attempt: its frame is the one being
// handled, forwarded when it passes unchanged.
func (g *Guard) settle(c transport.Ctl, p *prompt, m *transport.Msg, own bool) transport.Verdict {
	if !p.state.running() {
		return transport.Drop // the prompt was answered meanwhile (agent exit, late activity)
	}
	t := p.turn
	p.suppressed += t.Evidence.Suppressed
	stopReason, _ := jsonscan.String(jsonscan.Get(m.Result, "stopReason"))
	current := g.tracker.Current(t)
	g.tracker.Return(t, stopReason)
	// The turn's candidate error line is decided first: a failure report
	// (only for end_turn results) or output. An error line before the
	// agent's own JSON-RPC error is a diagnostic of it.
	line := g.settleErrorLine(c, t, stopReason)
	if p.stall.fired {
		return g.stalled(c, p) // the answer to the watchdog's cancel: too late
	}
	switch {
	case !current && own:
		// A response for an older generation: forwarded as it is.
		return g.pass(c, p, m, own, TurnReport{Outcome: OutcomePassed, StopReason: stopReason})
	case m.Error == nil:
		return g.settleResult(c, p, m, stopReason, line, own)
	case t.Evidence.Cancelled:
		// A cancelled turn is never rewritten or recovered.
		return g.pass(c, p, m, own, TurnReport{Outcome: OutcomePassed, Error: rpcError(m.Error)})
	}
	return g.fail(c, p, g.rpcFailure(c, t, m), own)
}

// settleResult handles a successful session/prompt result: a pending
// control-chunk marker, an error line (line) or a turn of nothing but
// retry notes turns it into a failure; a retry that produced nothing at
// all is not a recovery.
func (g *Guard) settleResult(c transport.Ctl, p *prompt, m *transport.Msg, stopReason string, line *failure, own bool) transport.Verdict {
	t := p.turn
	if t.Marker != nil && !t.Evidence.Cancelled && stopReason != string(acp.StopReasonCancelled) {
		return g.fail(c, p, g.markerFailure(c, t), own)
	}
	if line == nil {
		line = g.notesFailure(c, t, stopReason)
	}
	if line != nil {
		return g.fail(c, p, line, own)
	}
	if p.state == stProbing && stopReason == string(acp.StopReasonCancelled) {
		// A cancelled probe proves nothing about the provider: it passes,
		// and its lease is released (probing --pass--> answered).
		return g.pass(c, p, m, own, TurnReport{Outcome: OutcomeRetried, StopReason: stopReason})
	}
	if p.state.retry() && p.last != nil && emptyTurn(t) && stopReason == string(acp.StopReasonEndTurn) {
		// Some agents answer a re-sent prompt at once with a stale, empty
		// end_turn (claude-agent-acp 0.23.1 after an error). Report the
		// failure it was meant to recover from instead of an empty success.
		return g.stopWith(c, p, onStop, ReasonEmptyRetry, own)
	}
	p.note = g.annotate(c, p, m, stopReason)
	if f := g.emptyFailure(c, p); f != nil {
		return g.fail(c, p, f, own)
	}
	if p.state.retry() {
		g.transit(c, p, step{on: onSucceed, d: policy.Decision{Action: "none", Reason: "succeeded"}}, nil)
		return g.answerWith(c, p, m, own, TurnReport{Outcome: OutcomeRetried, StopReason: stopReason})
	}
	return g.pass(c, p, m, own, TurnReport{Outcome: OutcomePassed, StopReason: stopReason})
}

// markerFailure is the failure of a pending control-chunk marker: Cursor's
// constant diagnostic, or a KindReport chunk classified from its own text.
func (g *Guard) markerFailure(c transport.Ctl, t *observers.Turn) *failure {
	sig := t.Marker
	ev := classify.Evidence{
		Source: classify.SourceMessageChunk, Adapter: g.adapter, Message: sig.EvidenceText(t.MarkerText),
		Phase: "prompt", Generation: t.Generation, Stderr: t.Stderr(), Now: c.Now(),
	}
	f := &failure{source: classify.SourceMessageChunk, rewrite: sig.Diagnostic, signature: sig, excerpt: t.MarkerSuffix, turn: t}
	if sig.ClassifyText {
		f.verdict = g.classifyText(ev, false)
		t.StatedRetries = classify.StatedRetries(t.MarkerText)
	} else {
		f.verdict = g.classify(ev)
	}
	return f
}

// rpcFailure classifies an agent's JSON-RPC error response.
func (g *Guard) rpcFailure(c transport.Ctl, t *observers.Turn, m *transport.Msg) *failure {
	ev := classify.Evidence{
		Source: classify.SourceRPCError, Adapter: g.adapter, Phase: "prompt", Generation: t.Generation,
		Stderr: t.Stderr(), Now: c.Now(),
	}
	e := decodeRPCError(m.Error)
	if e.codeOK {
		ev.RPCCode = &e.Code
	}
	ev.Message, ev.Data = e.Message, e.Data
	t.StatedRetries = max(classify.StatedRetries(e.Message), classify.StatedRetries(string(e.Data)))
	// The relay reuses m and its buffer: keep a copy of the frame.
	own := transport.ParseMsg(append([]byte(nil), m.Line...))
	return &failure{verdict: g.classify(ev), source: classify.SourceRPCError, msg: &own, turn: t}
}

// emptyTurn reports whether a turn showed nothing at all.
func emptyTurn(t *observers.Turn) bool {
	e := t.Evidence
	return !e.AssistantOutput && !e.Thoughts && !e.ToolActivity && e.ToolUpdates == 0 && e.Effects == 0
}
