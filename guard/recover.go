package guard

import (
	"encoding/json"
	"fmt"

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
	ReasonSameProvider    = "same_provider_only" // skip, but the failure never authorizes a switch
	ReasonAgentExited     = "agent_exited"
	ReasonSessionEnded    = "session_ended"
	ReasonShuttingDown    = "shutting_down" // a signal to acp-guard: no new attempt starts
)

type modelSwitch struct {
	p     *prompt
	model string
	epoch uint64
}

// sameProviderOnly lists semantic codes that are evidence for recovering on
// the same provider and model only: a lost agent transport says nothing
// against the model, so it never authorizes switching to a fallback
// (spec 000, "Cursor retry-safety semantics").
var sameProviderOnly = map[string]bool{"agent_transport_lost": true}

// fail decides what to do about a failed attempt and moves p accordingly:
// to a wait or a switch (the work starts once its record is durable), or
// to action_required with the answer.
func (g *Guard) fail(c transport.Ctl, p *prompt, f *failure, own bool) transport.Verdict {
	d, next := g.decide(c, p, f)
	g.log.Info("failure classified", "session", p.session, "id", string(p.client.ID), "attempt", p.attempt,
		"code", f.verdict.Code, "class", string(f.verdict.Class), "rule", f.verdict.Rule,
		"replay_safe", f.turn.ReplaySafe(), "action", string(d.Action), "reason", d.Reason)
	g.circuitFailed(c, p, f, d)
	switch d.Action {
	case policy.ActionSkip:
		g.transit(c, p, step{on: onSkip, f: f, d: d}, func() { g.switchTo(c, p, next) })
	case policy.ActionRetry:
		g.transit(c, p, step{on: onRetry, f: f, d: d}, func() { g.arm(c, p, f, d) })
	case policy.ActionWait:
		g.transit(c, p, step{on: onWait, f: f, d: d}, func() { g.arm(c, p, f, d) })
	case policy.ActionCompact:
		g.transit(c, p, step{on: onCompact, f: f, d: d}, func() { g.compact(c, p, f) })
	default:
		if !g.transit(c, p, step{on: onStop, f: f, d: d}, nil) {
			return transport.Forward
		}
		return g.answerFailure(c, p, f, d, own)
	}
	if own && c.Pending(p.client) {
		return transport.Hold // the client's request waits for the recovery's answer
	}
	return transport.Drop
}

// decide evaluates the policy for f behind the replay-safety gate; for a
// skip it also picks the model to switch to.
func (g *Guard) decide(c transport.Ctl, p *prompt, f *failure) (policy.Decision, string) {
	safe := f.turn.ReplaySafe() && g.tracker.Current(f.turn) && !g.closed
	cp, _ := g.policyFor(f.verdict)
	p.maxRetries = cp.Retry.MaxRetries
	pf := policy.Failure{
		Class: string(f.verdict.Class), Code: f.verdict.Code, Safe: safe,
		RetryAfter: f.verdict.RetryAfter, ResetAt: f.verdict.ResetAt, Now: c.Now(),
		DiagnosticOnly: f.notesOnly, Jitter: g.jitter,
	}
	if g.circuitsOn() {
		// A jittered retry is never due before the circuit its failure
		// opens can let it through (its least cooldown): it would park,
		// and a replay could not tell when the parked retry went out.
		pf.MinDelay = circuit.MinCooldown
	}
	if !f.notesOnly {
		pf.Diagnostic = g.noteClass(f.turn, c.Now())
	}
	d, route := policy.Evaluate(g.cfg.Policy, pf, p.route)
	p.route = route
	if cd, ok := g.compactDecision(p, f, safe); ok {
		return cd, ""
	}
	if d.Action != policy.ActionSkip {
		return d, ""
	}
	next, ok := g.nextCandidate(p)
	switch {
	case ok && sameProviderOnly[f.verdict.Code]:
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
func (g *Guard) policyFor(v classify.Verdict) (policy.ClassPolicy, string) {
	if cp, key, ok := g.cfg.Policy.PolicyFor(string(v.Class), v.Code); ok {
		return cp, key
	}
	return g.cfg.Policy.Transient, string(v.Class)
}

// arm tells the client what happens next and starts the wait's timer; the
// deadline was fixed at the decision, so the time the record took to
// write does not lengthen the wait.
func (g *Guard) arm(c transport.Ctl, p *prompt, f *failure, d policy.Decision) {
	g.notice(c, p, f, d)
	delay := d.Delay
	if !d.Deadline.IsZero() {
		delay = max(d.Deadline.Sub(c.Now()), 0)
	}
	epoch := p.epoch
	p.stop = c.After(delay, func() { g.due(c, p, epoch) })
}

// due runs when a wait ends: the epoch fences a cancel, late activity and
// the timer against advancing the turn twice.
func (g *Guard) due(c transport.Ctl, p *prompt, epoch uint64) {
	p.stop = nil
	if p.epoch != epoch || g.closed {
		return
	}
	if g.dispatchable(c, p, p.turn) {
		g.dispatchDue(c, p) // asks the shared circuit first, when there is one
	}
}

// dispatchable reports whether held work may go out now that its moment
// came: the client still waits and t (the turn the work follows) is still
// the session's current one. Otherwise it ends the prompt and reports false.
func (g *Guard) dispatchable(c transport.Ctl, p *prompt, t *observers.Turn) bool {
	if !c.Pending(p.client) {
		// Answered by the relay meanwhile: nothing is left to recover.
		g.transit(c, p, step{on: onEnded}, nil)
		g.respond(c, p, TurnReport{Outcome: OutcomeFailed}, nil)
		return false
	}
	if !g.tracker.Current(t) {
		g.stopWith(c, p, onSuperseded, ReasonSuperseded, false)
		return false
	}
	return true
}

// dispatchRetry sends the cached prompt again with the proxy's own id: the
// moment the held turn is released.
func (g *Guard) dispatchRetry(c transport.Ctl, p *prompt) {
	p.attempt++
	p.agentRetries += p.turn.AgentRetries()
	p.turn = g.tracker.Start(p.session, c.Now())
	g.log.Info("retry sent", "session", p.session, "id", string(p.client.ID), "attempt", p.attempt, "model", p.model)
	c.Call(acp.AgentMethodSessionPrompt, p.session, p.params, p)
}

// nextCandidate returns the next fallback model the session can switch to.
func (g *Guard) nextCandidate(p *prompt) (string, bool) {
	if cands := g.candidates(p); len(cands) > 0 {
		return cands[0], true
	}
	return "", false
}

// candidates returns, in order, the fallback models the session can still
// switch to.
func (g *Guard) candidates(p *prompt) []string {
	info := g.sessions[p.session]
	if info == nil || (len(info.models) == 0 && info.modelOption == "") {
		return nil // the agent cannot switch models
	}
	var out []string
	for _, m := range append(append([]string(nil), g.cfg.Policy.FallbackModels...), g.cfg.Fallback...) {
		if m == info.currentModel || contains(p.tried, m) || contains(out, m) {
			continue
		}
		if !contains(info.models, m) && !contains(info.optionValues, m) {
			continue
		}
		out = append(out, m)
	}
	return out
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
	info := g.session(p.session)
	if info.currentModel != "" && !contains(p.tried, info.currentModel) {
		p.tried = append(p.tried, info.currentModel)
	}
	p.tried = append(p.tried, model)
	tag := &modelSwitch{p: p, model: model, epoch: p.epoch}
	g.log.Info("model switch", "session", p.session, "id", string(p.client.ID), "from", info.currentModel, "to", model)
	if f := p.last; f != nil {
		g.say(c, p, fmt.Sprintf("%s — switching to model %s", humanCode(f.verdict.Code), model), map[string]any{
			"action": "switch", "model": model, "code": f.verdict.Code, "class": string(f.verdict.Class),
			"attempt": p.attempt, "maxRetries": p.maxRetries,
		})
	}
	if contains(info.models, model) {
		params, _ := json.Marshal(struct {
			SessionID string `json:"sessionId"`
			ModelID   string `json:"modelId"`
		}{p.session, model})
		c.Call(acp.AgentMethodSessionSetModel, p.session, params, tag)
		return
	}
	params, _ := json.Marshal(struct {
		SessionID string `json:"sessionId"`
		ConfigID  string `json:"configId"`
		Value     string `json:"value"`
	}{p.session, info.modelOption, model})
	c.Call(acp.AgentMethodSessionSetConfigOption, p.session, params, tag)
}

// switched continues after a model switch: a new route cycle on the new
// candidate, retried at once; a refused switch stops.
func (g *Guard) switched(c transport.Ctl, s *modelSwitch, m *transport.Msg) {
	p := s.p
	if m.Error == nil {
		// The agent's model changed, whatever became of the prompt.
		g.session(p.session).currentModel = s.model
	}
	if p.state != stSwitching || p.epoch != s.epoch || g.closed || !c.Pending(p.client) {
		return
	}
	if m.Error != nil {
		reason := ReasonSwitchFailed
		if r, ok := notSent(m); ok {
			reason = r
		}
		g.log.Warn("model switch refused; stopping", "model", s.model, "reason", reason)
		g.stopWith(c, p, onSwitchFailed, reason, false)
		return
	}
	p.model = s.model
	p.route = policy.Route{}
	g.dispatchDue(c, p) // asks the new model's circuit first, when there is one
}

// Stopping answers every prompt the guard holds (a wait, a model switch,
// a compaction) with its failure at once, reason shutting_down: acp-guard got a stop
// signal, the relay refuses new requests of the proxy's own from now on,
// and the client should not wait for a retry that will never be sent.
func (g *Guard) Stopping(c transport.Ctl) {
	for _, p := range g.prompts {
		if p.state.waiting() {
			g.log.Info("recovery stopped by a signal", "session", p.session, "id", string(p.client.ID), "state", p.state.String())
			g.stopWith(c, p, onShutdown, ReasonShuttingDown, false)
		}
	}
}

// notSent reports whether m is the relay's refusal of a request of the
// proxy's own that never reached the agent (data.acpGuard.notSent), and
// the refusal's reason (shutting_down, agent_exited).
func notSent(m *transport.Msg) (string, bool) {
	if m.Error == nil {
		return "", false
	}
	var e struct {
		Data struct {
			AcpGuard struct {
				Reason  string `json:"reason"`
				NotSent bool   `json:"notSent"`
			} `json:"acpGuard"`
		} `json:"data"`
	}
	if json.Unmarshal(m.Error, &e) != nil || !e.Data.AcpGuard.NotSent {
		return "", false
	}
	return e.Data.AcpGuard.Reason, true
}

// cancelWaits answers "cancelled" at once every prompt of the session the
// guard holds (a wait, or a model switch). A retry already sent to the
// agent is cancelled by the agent itself: the client's session/cancel is
// forwarded.
func (g *Guard) cancelWaits(c transport.Ctl, sessionID string) {
	for _, p := range g.held(sessionID, false) {
		if g.transit(c, p, step{on: onCancel, d: policy.Decision{Action: policy.ActionStop, Reason: "cancelled"}}, nil) {
			g.answerCancelled(c, p)
		}
	}
}

// supersede answers, with the failure being recovered, every prompt of the
// session the guard holds when the client starts a new prompt there: the
// new generation makes the old turn stale, and the old request must still
// get its one answer.
func (g *Guard) supersede(c transport.Ctl, sessionID string) {
	for _, p := range g.held(sessionID, false) {
		g.stopWith(c, p, onSuperseded, ReasonSuperseded, false)
	}
}

// held returns the prompts of a session (of every session when all) that
// are between a failure and the dispatch of its recovery, in the order
// the client sent them.
func (g *Guard) held(sessionID string, all bool) []*prompt {
	if g.waiting == 0 {
		return nil
	}
	var out []*prompt
	for _, p := range g.prompts {
		if p.state.waiting() && (all || p.session == sessionID) {
			out = append(out, p)
		}
	}
	sortPrompts(out)
	return out
}
