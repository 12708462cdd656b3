package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/internal/jsonscan"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// Actions on held prompts (the recovery design's user actions: retry now, skip to the
// next model, stop). A prompt held until a moment comes — a reset wait's
// deadline, a retry's delay, the circuit's word while parked (state
// actionable) — can be told to move on early:
//
//   - by the client, with the ACP extension request MethodRecovery
//     {"sessionId", "action": "retry_now"|"skip"|"stop"}, answered with the
//     resulting state (advertised in the initialize result's
//     _meta.acpGuard.recovery when the policy can hold prompts);
//   - by an operator, through the held-prompt store (held.go; `acp-guard
//     held retry-now|skip|stop SESSION`).
//
// Both take the same path, act: the gate still decides (retry_now and
// skip are refused unless the held turn is still current and replay-safe;
// skip needs a fallback model the failure authorizes), each action is a
// row of the transition table (retry_now, skip_now, stop_now), an
// attempt-log record naming who asked (its by), a notice to the client
// and a log line.

// MethodRecovery is the extension method of actions on held prompts (ACP
// reserves method names starting with "_" for extensions).
const MethodRecovery = "_acp-guard/recovery"

// Reasons of the actions (recovery.reason, the attempt log's decision).
const (
	ReasonRetryNow = "retry_now"
	ReasonSkipNow  = "skip_now"
	ReasonStopNow  = "stop_now"
)

// Who asks for an action.
const (
	ByClient   = "client"
	ByOperator = "operator"
)

// JSON-RPC errors of MethodRecovery.
const (
	codeInvalidParams = -32602
	codeNotFound      = -32002 // ACP's "resource not found": nothing held
)

// actions takes actions on held prompts, for the client and operators.
type actions struct {
	m       *machine
	rc      *recovery
	sw      *switcher
	ag      *agent
	ev      *emitter
	tracker *observers.Tracker
}

// errNotHeld: the prompt is not (or no longer) in a state that takes
// actions.
var errNotHeld = errors.New("not held")

// actionAllowed is the gate for an action on p: nil, or why not.
func (a *actions) allowed(c transport.Ctl, p *prompt, action string) error {
	switch {
	case !p.state.actionable() || a.m.closed || !c.Pending(p.client):
		return fmt.Errorf("%w (%s)", errNotHeld, p.state)
	case action == held.ActionStop:
		return nil
	case p.last == nil || !p.last.turn.ReplaySafe() || !a.tracker.Current(p.turn) || markOf(p.turn) != p.mark || p.late.any():
		return errors.New("the held turn is not replay-safe any more")
	case action == held.ActionRetryNow:
		return nil
	case action != held.ActionSkip:
		return fmt.Errorf("unknown action %q", action)
	case classify.SameProviderOnly(p.last.verdict.Code):
		return fmt.Errorf("%s never authorizes a switch to another model", p.last.verdict.Code)
	}
	if _, ok := a.ag.nextCandidate(p); !ok {
		return errors.New("no fallback model left to switch to")
	}
	return nil
}

// offered lists the actions the gate allows on p now.
func (a *actions) offered(c transport.Ctl, p *prompt) []string {
	var out []string
	for _, act := range held.Actions {
		if a.allowed(c, p, act) == nil {
			out = append(out, act)
		}
	}
	return out
}

// act takes action on p for by ("client" or "operator"), or says why it
// cannot.
func (a *actions) act(c transport.Ctl, p *prompt, action, by string) error {
	if err := a.allowed(c, p, action); err != nil {
		if a.ev.on() {
			a.ev.emit(RecoveryAction{EventBase: a.ev.base(c, p), Action: action, By: by, From: p.state.String(), To: p.state.String(), Refused: err.Error()})
		}
		return err
	}
	from := p.state
	d := policy.Decision{Attempt: p.attempt, MaxRetries: p.maxRetries}
	if p.last != nil {
		d.Class = string(p.last.verdict.Class)
	}
	a.notice(c, p, action, by)
	switch action {
	case held.ActionRetryNow:
		d.Action, d.Reason, d.Attempt = policy.ActionRetry, ReasonRetryNow, p.attempt+1
		a.m.circ.retryNow(p)
		a.m.transit(c, p, step{on: onRetryNow, d: d, by: by}, func() { a.rc.dispatchRetry(c, p) })
	case held.ActionSkip:
		next, _ := a.ag.nextCandidate(p)
		d.Action, d.Reason = policy.ActionSkip, ReasonSkipNow
		a.m.transit(c, p, step{on: onSkipNow, d: d, by: by}, func() { a.sw.switchTo(c, p, next) })
	case held.ActionStop:
		d.Action, d.Reason = policy.ActionStop, ReasonStopNow
		p.stoppedBy = by
		if a.m.transit(c, p, step{on: onStopNow, d: d, by: by}, nil) && p.last != nil {
			a.rc.answerFailure(c, p, p.last, d, false)
		}
	}
	if a.ev.on() {
		a.ev.emit(RecoveryAction{EventBase: a.ev.base(c, p), Action: action, By: by, From: from.String(), To: p.state.String()})
	}
	return nil
}

// actionNotice tells the client what an action does, before it does it.
func (a *actions) notice(c transport.Ctl, p *prompt, action, by string) {
	who := "the client"
	if by == ByOperator {
		who = "an operator"
	}
	text := map[string]string{
		held.ActionRetryNow: "retrying now",
		held.ActionSkip:     "skipping to the next fallback model",
		held.ActionStop:     "recovery stopped",
	}[action]
	meta := map[string]any{"action": action, "by": by, "attempt": p.attempt, "maxRetries": p.maxRetries}
	if f := p.last; f != nil {
		meta["code"], meta["class"] = f.verdict.Code, string(f.verdict.Class)
	}
	ev := NoticeSent{Action: action, Attempt: p.attempt, MaxRetries: p.maxRetries}
	if f := p.last; f != nil {
		ev.Code, ev.Class = f.verdict.Code, string(f.verdict.Class)
	}
	a.ev.say(c, p, fmt.Sprintf("%s (asked by %s)", text, who), meta, ev)
}

// recoveryParams are MethodRecovery's params.
type recoveryParams struct {
	SessionID string `json:"sessionId"`
	Action    string `json:"action"`
}

// RecoveryResult is MethodRecovery's result: the prompt acted on (the
// client's id of its session/prompt) and its state before and after.
type RecoveryResult struct {
	SessionID     string          `json:"sessionId"`
	RequestID     json.RawMessage `json:"requestId"`
	Action        string          `json:"action"`
	PreviousState string          `json:"previousState"`
	State         string          `json:"state"`
}

// recoveryRequest answers the client's MethodRecovery request req: it
// acts on the session's held prompt and answers with the resulting state,
// or with a JSON-RPC error — invalid params (-32602), nothing held in the
// session (-32002), or an action the gate refuses (-32602, with the state
// and the actions offered). The request never reaches the agent.
func (a *actions) request(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	var rp recoveryParams
	if m.Params == nil || json.Unmarshal(m.Params, &rp) != nil || rp.SessionID == "" || !slices.Contains(held.Actions, rp.Action) {
		replyError(c, req, codeInvalidParams, `acp-guard: `+MethodRecovery+` wants {"sessionId": …, "action": "retry_now" | "skip" | "stop"}`,
			map[string]any{"reason": "invalid_params", "actions": held.Actions})
		return transport.Drop
	}
	var p *prompt
	for _, q := range a.m.held(rp.SessionID, false) {
		if q.state.actionable() {
			p = q // the latest the client sent
		}
	}
	if p == nil {
		replyError(c, req, codeNotFound, "acp-guard: no prompt of session "+quoteID(rp.SessionID)+" is held for recovery",
			map[string]any{"reason": "not_held", "sessionId": rp.SessionID})
		return transport.Drop
	}
	from := p.state
	if err := a.act(c, p, rp.Action, ByClient); err != nil {
		replyError(c, req, codeInvalidParams, "acp-guard: "+rp.Action+" is not allowed: "+err.Error(),
			map[string]any{"reason": "not_allowed", "sessionId": rp.SessionID, "state": p.state.String(), "actions": a.offered(c, p)})
		return transport.Drop
	}
	res, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  RecoveryResult  `json:"result"`
	}{"2.0", req.ID, RecoveryResult{SessionID: rp.SessionID, RequestID: p.client.ID, Action: rp.Action,
		PreviousState: from.String(), State: p.state.String()}})
	c.Reply(req, append(res, '\n'))
	return transport.Drop
}

// replyError answers a client request of acp-guard's own with a JSON-RPC
// error whose data.acpGuard holds what a machine needs.
func replyError(c transport.Ctl, req *transport.Request, code int, msg string, data map[string]any) {
	c.Reply(req, transport.ErrorResponse(req.ID, code, msg, map[string]any{"acpGuard": data}))
}

// quoteID bounds and quotes an id for a message.
func quoteID(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// advertise adds the extension to the agent's initialize result:
// _meta.acpGuard.recovery {method, actions}. It leaves a result that
// already carries _meta.acpGuard (an acp-guard behind acp-guard) alone.
func advertise(m *transport.Msg) ([]byte, bool) {
	meta := jsonscan.Get(m.Result, "_meta")
	if meta != nil && jsonscan.Get(meta, "acpGuard") != nil {
		return nil, false
	}
	r := reply{result: m.Result, meta: meta}
	ed, ok := resultMetaEdit(m.Line, &r, map[string]any{
		"recovery": map[string]any{"method": MethodRecovery, "actions": held.Actions},
	})
	if !ok {
		return nil, false
	}
	return applyEdits(m.Line, ed), true
}
