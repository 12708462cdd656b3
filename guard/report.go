package guard

import (
	"github.com/acp-guard/acp-guard/classify"
	evt "github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/policy"

	"encoding/json"
)

// Outcomes of a prompt turn (the "outcome" of a `replay --json` line).
const (
	OutcomePassed    = evt.OutcomePassed
	OutcomeRewritten = evt.OutcomeRewritten
	OutcomeAnnotated = evt.OutcomeAnnotated
	OutcomeRetried   = evt.OutcomeRetried
	OutcomeFailed    = evt.OutcomeFailed
)

// The turn report and its parts are package event's.
type (
	RPCError   = evt.RPCError
	TurnReport = evt.TurnReport
)

// report reports how p's turn ended (Answered), once.
func (ev *emitter) report(p *prompt, r TurnReport) {
	if p.reported {
		return
	}
	p.reported = true
	r.SessionID = p.session
	r.RequestID = json.RawMessage(append([]byte(nil), p.client.ID...))
	r.Generation = p.first.Generation
	r.Suppressed = p.suppressed
	if p.attempt > 0 {
		r.Attempts = p.attempt + 1
	}
	r.Model = p.model
	r.AgentRetries = p.agentRetries + p.turn.AgentRetries()
	if r.Decision == nil && len(p.decisions) > 0 {
		d := decisionOf(p.decisions[len(p.decisions)-1])
		r.Decision = &d
	}
	if ev.on() {
		ev.emit(Answered{
			EventBase: EventBase{At: r.At, Agent: ev.ag.adapter, SessionID: p.session, RequestID: p.client.ID},
			Report:    r, Duration: r.At.Sub(p.client.At),
		})
	}
}

// decisionOf is a policy decision as events and reports carry it: the one
// place the two meet.
func decisionOf(d policy.Decision) evt.Decision {
	return evt.Decision{Action: string(d.Action), Delay: d.Delay, DelayMs: d.DelayMs, Deadline: d.Deadline,
		Attempt: d.Attempt, MaxRetries: d.MaxRetries, Class: d.Class, Reason: d.Reason}
}

// verdictOf is a classification as events carry it.
func verdictOf(v classify.Verdict) evt.Verdict {
	return evt.Verdict{Code: v.Code, Class: string(v.Class), Confidence: v.Confidence, Scope: v.Scope, Rule: v.Rule,
		CatalogueVersion: v.CatalogueVersion, RetryAfter: v.RetryAfter, ResetAt: v.ResetAt, SafeExcerpt: v.SafeExcerpt,
		Reason: v.Reason, Conflicts: v.Conflicts}
}
