package guard

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/internal/jsonscan"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// prompt is one client session/prompt and its recovery: the original
// attempt and any retries the guard sends on its behalf. It is answered
// exactly once (transport.Ctl.Reply enforces it).
type prompt struct {
	client     *transport.Request
	session    string
	params     []byte
	first      *observers.Turn // the client's own attempt
	turn       *observers.Turn // the current attempt
	attempt    int             // 0: the client's own; 1..: the guard's retries
	route      policy.Route
	tried      []string // models tried in this route
	model      string   // model switched to by fallback ("" if none)
	maxRetries int
	suppressed int
	waiting    bool
	cancelled  bool // the client cancelled while the guard owned the turn
	stop       func() bool
	decisions  []policy.Decision
	reported   bool
	last       *failure // the latest failure, answered if recovery stops
}

func (p *prompt) stopTimer() {
	if p.stop != nil {
		p.stop()
		p.stop = nil
	}
	p.waiting = false
}

// failure is a failed attempt, ready to be answered.
type failure struct {
	verdict   classify.Verdict
	source    classify.Source
	msg       *transport.Msg // the agent's response (annotated), nil for a rewrite
	rewrite   string         // the constant diagnostic of a control-chunk projection
	signature *observers.ControlSignature
	excerpt   string // the control chunk's suffix (untrusted; sanitized on use)
	turn      *observers.Turn
}

type modelSwitch struct {
	p     *prompt
	model string
}

// settle handles a session/prompt response for p's current attempt.
func (g *Guard) settle(c transport.Ctl, p *prompt, m *transport.Msg, fromProxy bool) transport.Verdict {
	t := p.turn
	p.suppressed += t.Evidence.Suppressed
	stopReason, _ := jsonscan.String(jsonscan.Get(m.Result, "stopReason"))
	current := g.tracker.Current(t)
	g.tracker.Return(t, stopReason)
	if !current && !fromProxy {
		// A response for an older generation: forwarded as it is.
		delete(g.prompts, p.client)
		g.report(p, TurnReport{Outcome: OutcomePassed, StopReason: stopReason})
		return transport.Forward
	}
	if m.Error == nil {
		if t.Marker != nil && !t.Evidence.Cancelled && stopReason != string(acp.StopReasonCancelled) {
			sig := t.Marker
			v := g.classify(classify.Evidence{
				Source: classify.SourceMessageChunk, Adapter: g.adapter, Message: sig.EvidenceText(t.MarkerSuffix),
				Phase: "prompt", Generation: t.Generation, Stderr: t.Stderr(), Now: c.Now(),
			})
			return g.fail(c, p, &failure{verdict: v, source: classify.SourceMessageChunk, rewrite: sig.Diagnostic, signature: sig, excerpt: t.MarkerSuffix, turn: t}, fromProxy)
		}
		if fromProxy && p.last != nil && emptyTurn(t) && stopReason == string(acp.StopReasonEndTurn) {
			// A retry that produced nothing at all is not a recovery: some
			// agents answer a re-sent prompt at once with a stale, empty
			// end_turn (claude-agent-acp 0.23.1 after an error). Report the
			// failure it was meant to recover from instead of an empty
			// success.
			d := policy.Decision{Action: policy.ActionStop, Reason: "empty_retry_result", Class: string(p.last.verdict.Class)}
			g.appendAttempt(c, p, p.last, d, policy.AttemptStopped)
			p.decisions = append(p.decisions, d)
			return g.answerFailure(c, p, p.last, d, true)
		}
		return g.succeed(c, p, m, stopReason, fromProxy)
	}
	if t.Evidence.Cancelled {
		// A cancelled turn is never rewritten or recovered.
		return g.finishWith(c, p, m, fromProxy, TurnReport{Outcome: OutcomePassed, Error: rpcError(m.Error)})
	}
	ev := classify.Evidence{
		Source: classify.SourceRPCError, Adapter: g.adapter, Phase: "prompt", Generation: t.Generation,
		Stderr: t.Stderr(), Now: c.Now(),
	}
	if code, err := jsonInt(jsonscan.Get(m.Error, "code")); err == nil {
		ev.RPCCode = &code
	}
	ev.Message, _ = jsonscan.String(jsonscan.Get(m.Error, "message"))
	if d := jsonscan.Get(m.Error, "data"); d != nil {
		ev.Data = json.RawMessage(d)
	}
	v := g.classify(ev)
	// The relay reuses m and its buffer: keep a copy of the frame.
	own := transport.ParseMsg(append([]byte(nil), m.Line...))
	return g.fail(c, p, &failure{verdict: v, source: classify.SourceRPCError, msg: &own, turn: t}, fromProxy)
}

// emptyTurn reports whether a turn showed nothing at all.
func emptyTurn(t *observers.Turn) bool {
	e := t.Evidence
	return !e.AssistantOutput && !e.Thoughts && !e.ToolActivity && e.ToolUpdates == 0 && e.Effects == 0
}

// succeed answers the client with a successful attempt. The client's own
// successful attempt passes untouched.
func (g *Guard) succeed(c transport.Ctl, p *prompt, m *transport.Msg, stopReason string, fromProxy bool) transport.Verdict {
	if p.attempt > 0 {
		g.appendAttempt(c, p, nil, policy.Decision{Action: "none", Reason: "succeeded"}, policy.AttemptSucceeded)
	}
	outcome := OutcomePassed
	if p.attempt > 0 {
		outcome = OutcomeRetried
	}
	return g.finishWith(c, p, m, fromProxy, TurnReport{Outcome: outcome, StopReason: stopReason})
}

// finishWith answers the client with the agent's frame m: forwarded as it
// is for the client's own attempt, or re-addressed to the client's id (and
// marked with the model that answered) for a retry.
func (g *Guard) finishWith(c transport.Ctl, p *prompt, m *transport.Msg, fromProxy bool, rep TurnReport) transport.Verdict {
	delete(g.prompts, p.client)
	g.report(p, rep)
	if !fromProxy && p.model == "" {
		return transport.Forward
	}
	line := m.Line
	if p.model != "" && m.Result != nil {
		line = withResultMeta(line, m.Result, map[string]any{"model": p.model, "attempts": p.attempt + 1})
	}
	c.Reply(p.client, g.readdress(line, p))
	return transport.Drop
}

// readdress replaces the id of a response frame with the client's id.
func (g *Guard) readdress(line []byte, p *prompt) []byte {
	mm := transport.ParseMsg(line)
	if mm.ID == nil || string(mm.ID) == string(p.client.ID) {
		return line
	}
	return replaceID(line, mm.ID, p.client.ID)
}

// fail decides what to do about a failed attempt and does it.
func (g *Guard) fail(c transport.Ctl, p *prompt, f *failure, fromProxy bool) transport.Verdict {
	p.last = f
	now := c.Now()
	safe := f.turn.ReplaySafe() && g.tracker.Current(f.turn) && !g.closed
	cp := g.classPolicy(f.verdict.Class)
	p.maxRetries = cp.Retry.MaxRetries
	d, route := policy.Evaluate(g.cfg.Policy, policy.Failure{
		Class: string(f.verdict.Class), Code: f.verdict.Code, Safe: safe,
		RetryAfter: f.verdict.RetryAfter, ResetAt: f.verdict.ResetAt, Now: now,
	}, p.route)
	p.route = route
	if d.Action == policy.ActionSkip {
		next, ok := g.nextCandidate(p)
		if ok && sameProviderOnly[f.verdict.Code] {
			d.Action, d.Reason = policy.ActionStop, "same_provider_only"
			ok = false
		}
		if ok {
			g.appendAttempt(c, p, f, d, policy.AttemptFailed)
			p.decisions = append(p.decisions, d)
			g.switchModel(c, p, next)
			return g.hold(fromProxy)
		}
		if d.Action == policy.ActionSkip {
			d.Action, d.Reason = policy.ActionStop, "no_fallback"
		}
	}
	switch d.Action {
	case policy.ActionRetry, policy.ActionWait:
		g.appendAttempt(c, p, f, d, policy.AttemptScheduled)
		p.decisions = append(p.decisions, d)
		g.notice(c, p, f, d)
		p.waiting = true
		fence := p.turn
		p.stop = c.After(d.Delay, func() { g.fire(c, p, fence) })
		return g.hold(fromProxy)
	}
	// Stop: answer the client with this failure.
	g.appendAttempt(c, p, f, d, policy.AttemptStopped)
	p.decisions = append(p.decisions, d)
	return g.answerFailure(c, p, f, d, fromProxy)
}

// sameProviderOnly lists semantic codes that are evidence for recovering on
// the same provider and model only: a lost agent transport says nothing
// against the model, so it never authorizes switching to a fallback
// (spec 000, "Cursor retry-safety semantics").
var sameProviderOnly = map[string]bool{"agent_transport_lost": true}

func (g *Guard) hold(fromProxy bool) transport.Verdict {
	if fromProxy {
		return transport.Drop
	}
	return transport.Hold
}

func (g *Guard) classPolicy(class classify.Class) policy.ClassPolicy {
	if class == classify.ClassHard {
		return g.cfg.Policy.Hard
	}
	return g.cfg.Policy.Transient
}

// answerFailure sends the final ProviderError for p.
func (g *Guard) answerFailure(c transport.Ctl, p *prompt, f *failure, d policy.Decision, fromProxy bool) transport.Verdict {
	pe := newProviderError(f.verdict, f.turn, g.adapter, f.source, c.Now())
	if f.signature != nil {
		pe.Source = f.signature.Source
		pe.ProviderID = f.signature.Adapter
		if f.excerpt != "" {
			pe.SafeExcerpt = classify.Sanitize(f.excerpt)
		}
	}
	pe.Model = p.model
	pe.Recovery = Recovery{Action: string(policy.ActionStop), Attempt: p.attempt, MaxRetries: p.maxRetries, Reason: d.Reason}
	delete(g.prompts, p.client)
	var line []byte
	rep := TurnReport{ProviderError: &pe, Decision: &p.decisions[len(p.decisions)-1]}
	if f.msg == nil {
		line = transport.ErrorResponse(p.client.ID, -32603, f.rewrite, map[string]any{"providerError": pe})
		rep.Outcome = OutcomeRewritten
		rep.Error = &RPCError{Code: -32603, Message: f.rewrite}
	} else {
		line = g.readdress(annotateError(f.msg.Line, f.msg.Error, pe), p)
		rep.Outcome = OutcomeAnnotated
		rep.Error = rpcError(f.msg.Error)
	}
	g.report(p, rep)
	c.Reply(p.client, line)
	return transport.Drop
}

// fire runs when a retry or wait is due: the generation fence makes a
// cancel, a late frame and the timer unable to advance the turn twice.
func (g *Guard) fire(c transport.Ctl, p *prompt, fence *observers.Turn) {
	p.stop = nil
	if !p.waiting || p.cancelled || p.turn != fence || !g.tracker.Current(fence) || !c.Pending(p.client) || g.closed {
		return
	}
	p.waiting = false
	g.retry(c, p)
}

// retry sends the cached prompt again with the proxy's own id.
func (g *Guard) retry(c transport.Ctl, p *prompt) {
	p.attempt++
	p.turn = g.tracker.Start(p.session, c.Now())
	c.Call(acp.AgentMethodSessionPrompt, p.session, p.params, p)
}

// cancelWaits ends the guard's recovery of the session's prompts: a
// prompt waiting for a retry or reset is answered with stopReason
// "cancelled" at once; one whose model switch is in flight is answered so
// when the switch returns. (A retry already sent to the agent is cancelled
// by the agent itself: the client's session/cancel is forwarded.)
func (g *Guard) cancelWaits(c transport.Ctl, sessionID string) {
	for _, p := range g.prompts {
		if p.session != sessionID || p.attempt == 0 && !p.waiting && p.last == nil {
			continue // the client's own attempt: the agent handles the cancel
		}
		p.cancelled = true
		if p.waiting {
			p.stopTimer()
			g.answerCancelled(c, p)
		}
	}
}

// supersede answers, with the failure being recovered, every prompt of the
// session that waits for a retry when the client starts a new prompt there:
// the new generation makes the old turn stale, so its timer could never
// fire a retry, and the old request must still get its one answer.
func (g *Guard) supersede(c transport.Ctl, sessionID string) {
	for _, p := range g.prompts {
		if p.session != sessionID || !p.waiting || p.last == nil {
			continue
		}
		p.stopTimer()
		d := policy.Decision{Action: policy.ActionStop, Reason: "superseded", Class: string(p.last.verdict.Class)}
		g.appendAttempt(c, p, p.last, d, policy.AttemptStopped)
		p.decisions = append(p.decisions, d)
		g.answerFailure(c, p, p.last, d, true)
	}
}

// answerCancelled answers p with stopReason "cancelled".
func (g *Guard) answerCancelled(c transport.Ctl, p *prompt) {
	delete(g.prompts, p.client)
	d := policy.Decision{Action: policy.ActionStop, Reason: "cancelled"}
	g.appendAttempt(c, p, p.last, d, policy.AttemptCancelled)
	g.report(p, TurnReport{Outcome: OutcomePassed, StopReason: string(acp.StopReasonCancelled), Decision: &d})
	c.Reply(p.client, []byte(`{"jsonrpc":"2.0","id":`+string(p.client.ID)+`,"result":{"stopReason":"cancelled"}}`+"\n"))
}

// nextCandidate returns the next fallback model the session can switch to.
func (g *Guard) nextCandidate(p *prompt) (string, bool) {
	info := g.sessions[p.session]
	if info == nil || (len(info.models) == 0 && info.modelOption == "") {
		return "", false // the agent cannot switch models
	}
	cands := append(append([]string(nil), g.cfg.Policy.FallbackModels...), g.cfg.Fallback...)
	for _, m := range cands {
		if m == info.currentModel || contains(p.tried, m) {
			continue
		}
		if len(info.models) > 0 && !contains(info.models, m) && !contains(info.optionValues, m) {
			continue
		}
		if len(info.models) == 0 && !contains(info.optionValues, m) {
			continue
		}
		return m, true
	}
	return "", false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// switchModel asks the agent to change the session's model.
func (g *Guard) switchModel(c transport.Ctl, p *prompt, model string) {
	info := g.sessions[p.session]
	if info.currentModel != "" && !contains(p.tried, info.currentModel) {
		p.tried = append(p.tried, info.currentModel)
	}
	p.tried = append(p.tried, model)
	sid, _ := json.Marshal(p.session)
	mj, _ := json.Marshal(model)
	if len(info.models) > 0 && contains(info.models, model) {
		c.Call(acp.AgentMethodSessionSetModel, p.session, []byte(`{"sessionId":`+string(sid)+`,"modelId":`+string(mj)+`}`), &modelSwitch{p: p, model: model})
		return
	}
	oj, _ := json.Marshal(info.modelOption)
	c.Call(acp.AgentMethodSessionSetConfigOption, p.session, []byte(`{"sessionId":`+string(sid)+`,"configId":`+string(oj)+`,"value":`+string(mj)+`}`), &modelSwitch{p: p, model: model})
}

// switched continues after a model switch: a new route cycle on the new
// candidate, retried at once; a refused switch stops.
func (g *Guard) switched(c transport.Ctl, s *modelSwitch, m *transport.Msg) {
	p := s.p
	if !c.Pending(p.client) || g.closed {
		return
	}
	if p.cancelled {
		g.answerCancelled(c, p)
		return
	}
	if m.Error != nil {
		g.log.Warn("model switch refused; stopping", "model", s.model)
		d := policy.Decision{Action: policy.ActionStop, Reason: "switch_failed"}
		p.decisions = append(p.decisions, d)
		g.answerFailure(c, p, p.last, d, true)
		return
	}
	g.session(p.session).currentModel = s.model
	p.model = s.model
	p.route = policy.Route{}
	g.retry(c, p)
}

// notice tells the client, before a delayed retry or wait, what happens next.
func (g *Guard) notice(c transport.Ctl, p *prompt, f *failure, d policy.Decision) {
	if g.cfg.Notices == NoticesOff {
		return
	}
	kind := "agent_thought_chunk"
	if g.cfg.Notices == NoticesMessage {
		kind = "agent_message_chunk"
	}
	deadline := c.Now().Add(d.Delay).UTC()
	next := "retry"
	verb := "retrying"
	if d.Action == policy.ActionWait {
		next, verb = "wait_for_reset", "waiting for the provider's reset, then retrying"
	}
	attempt := d.Attempt // the retry's ordinal; 0 for a reset wait
	count := fmt.Sprintf("retry %d/%d", attempt, p.maxRetries)
	if d.Action == policy.ActionWait {
		count = "after the reset"
	}
	text := fmt.Sprintf("%s — %s in %s (%s)", humanCode(f.verdict.Code), verb, roundDur(d.Delay), count)
	meta := map[string]any{"acpGuard": map[string]any{"retry": map[string]any{
		"attempt": attempt, "maxRetries": p.maxRetries, "delayMs": d.Delay.Milliseconds(),
		"deadline": deadline.Format(time.RFC3339), "code": f.verdict.Code, "class": string(f.verdict.Class),
		"action": next, "rule": f.verdict.Rule,
		// What happens if this attempt fails too and the budget is spent.
		"onExhausted": string(g.classPolicy(f.verdict.Class).OnExhausted),
	}}}
	upd := map[string]any{
		"sessionUpdate": kind,
		"content":       map[string]any{"type": "text", "text": text + "\n"},
		"_meta":         meta,
	}
	frame, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": acp.ClientMethodSessionUpdate,
		"params": map[string]any{"sessionId": p.session, "update": upd}})
	if err != nil {
		return
	}
	c.ToClient(append(frame, '\n'))
}

func humanCode(code string) string {
	switch code {
	case "provider_overloaded":
		return "provider overloaded"
	case "rate_limited":
		return "rate limited"
	case "agent_transport_lost":
		return "connection to the provider lost"
	case "quota_limited":
		return "usage quota reached"
	}
	return strings.ReplaceAll(code, "_", " ")
}

func roundDur(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

func jsonInt(raw []byte) (int, error) {
	var n int
	err := json.Unmarshal(raw, &n)
	return n, err
}

// appendAttempt writes one attempt-log record.
func (g *Guard) appendAttempt(c transport.Ctl, p *prompt, f *failure, d policy.Decision, outcome policy.AttemptOutcome) {
	if g.cfg.Attempts == nil {
		return
	}
	rec := policy.Record{
		Time: c.Now().UTC(), SessionID: p.session, RequestID: string(p.client.ID),
		Generation: p.turn.Generation, Attempt: p.attempt, Decision: d, Policy: g.cfg.Policy, Outcome: outcome,
	}
	if f != nil {
		rec.Code, rec.Class, rec.Rule, rec.CatalogueVersion = f.verdict.Code, string(f.verdict.Class), f.verdict.Rule, f.verdict.CatalogueVersion
	}
	if err := g.cfg.Attempts.Append(rec); err != nil {
		g.log.Warn("attempt log append failed", "err", err)
	}
}
