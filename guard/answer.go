package guard

import (
	"sort"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// respond is the one path that answers a client prompt: it ends the
// prompt's bookkeeping, reports the turn, and either writes line as the
// answer (re-addressed to the client's id by the caller) or, for a nil
// line, lets the frame being handled go through as it is (the client's own
// response) — or the relay's exit answer, for ExitData.
func (rc *recovery) respond(c transport.Ctl, p *prompt, rep TurnReport, line []byte) transport.Verdict {
	rc.m.forget(p)
	p.stall.disarm()
	rc.ag.noteOutcome(p, rep)
	rc.ag.noteAnswered(p)
	rep.At = c.Now()
	rc.ev.report(p, rep)
	if line == nil {
		return transport.Forward
	}
	c.Reply(p.client, line)
	return transport.Drop
}

// pass answers the client with the agent's own answer, unchanged for the
// client's own attempt (active --pass--> answered, or retrying --pass-->
// answered for a retry that was cancelled or answered for an old
// generation).
func (rc *recovery) pass(c transport.Ctl, p *prompt, m *transport.Msg, r *reply, own bool, rep TurnReport) transport.Verdict {
	rc.m.transit(c, p, step{on: onPass}, nil)
	return rc.answerWith(c, p, m, r, own, rep)
}

// answerWith answers the client with the agent's frame m: forwarded as it
// is for the client's own attempt, or re-addressed to the client's id (and
// marked with the model that answered) for a retry.
func (rc *recovery) answerWith(c transport.Ctl, p *prompt, m *transport.Msg, r *reply, own bool, rep TurnReport) transport.Verdict {
	meta := p.note.meta(resultMeta(p))
	if p.note.silent != nil {
		rep.Silent = p.note.silent.Kind
	}
	if own && meta == nil {
		return rc.respond(c, p, rep, nil)
	}
	var eds []edit
	if meta != nil && m.Result != nil {
		if e, ok := resultMetaEdit(m.Line, r, meta); ok {
			eds = append(eds, e)
		}
	}
	return rc.respond(c, p, rep, applyEdits(m.Line, readdress(m, p, eds)...))
}

// readdress adds to eds the edit that gives a response frame the client's
// id, when it has another (a retry's answer).
func readdress(m *transport.Msg, p *prompt, eds []edit) []edit {
	if m.ID == nil || string(m.ID) == string(p.client.ID) {
		return eds
	}
	return append(eds, idEdit(m.Line, m.ID, p.client.ID))
}

// stopWith moves p to action_required on event on and answers the failure
// being recovered with recovery.reason reason.
func (rc *recovery) stopWith(c transport.Ctl, p *prompt, on event, reason string, own bool) transport.Verdict {
	d := policy.Decision{Action: policy.ActionStop, Reason: reason}
	if p.last != nil {
		d.Class = string(p.last.verdict.Class)
	}
	if !rc.m.transit(c, p, step{on: on, d: d}, nil) || p.last == nil {
		return transport.Forward
	}
	return rc.answerFailure(c, p, p.last, d, own)
}

// answerFailure sends the final ProviderError for p: the agent's error
// annotated, or the rewrite of a control-chunk projection.
func (rc *recovery) answerFailure(c transport.Ctl, p *prompt, f *failure, d policy.Decision, own bool) transport.Verdict {
	pe := rc.providerError(c, p, f, recoveryAction(d.Reason), d.Reason)
	last := decisionOf(p.decisions[len(p.decisions)-1])
	rep := TurnReport{ProviderError: &pe, Decision: &last}
	if f.msg == nil {
		rep.Outcome = OutcomeRewritten
		rep.Error = &RPCError{Code: -32603, Message: f.rewrite}
		return rc.respond(c, p, rep, transport.ErrorResponse(p.client.ID, -32603, f.rewrite, map[string]any{"providerError": pe}))
	}
	rep.Outcome = OutcomeAnnotated
	rep.Error = f.rpc.rpc()
	var eds []edit
	if e, ok := annotateEdit(f.msg.Line, f.rpc, pe); ok {
		eds = append(eds, e)
	}
	return rc.respond(c, p, rep, applyEdits(f.msg.Line, readdress(f.msg, p, eds)...))
}

// answerCancelled answers p with stopReason "cancelled".
func (rc *recovery) answerCancelled(c transport.Ctl, p *prompt) {
	d := decisionOf(policy.Decision{Action: policy.ActionStop, Reason: "cancelled"})
	rc.respond(c, p, TurnReport{Outcome: OutcomePassed, StopReason: string(acp.StopReasonCancelled), Decision: &d},
		[]byte(`{"jsonrpc":"2.0","id":`+string(p.client.ID)+`,"result":{"stopReason":"cancelled"}}`+"\n"))
}

// providerError is the one ProviderError builder: the verdict and the
// turn's evidence (with what the gate saw while the turn was held), the
// projection's source, the model, and what recovery did.
func (rc *recovery) providerError(c transport.Ctl, p *prompt, f *failure, action, reason string) ProviderError {
	pe := newProviderError(f.verdict, f.turn, rc.ag.adapter, f.source, c.Now())
	if f.signature != nil {
		pe.Source = f.signature.Source
		pe.ProviderID = f.signature.Adapter
		if f.excerpt != "" {
			pe.SafeExcerpt = classify.Sanitize(f.excerpt)
		}
	}
	pe.Model = rc.ag.modelOf(p)
	if p.stall.stalled() {
		pe.Evidence.StalledMs, pe.Evidence.LastFrame = p.stall.idle.Milliseconds(), p.stall.last
	}
	if p.late.any() {
		pe.ReplaySafe = false
		pe.Evidence.AgentRequests = pe.Evidence.AgentRequests || p.late.requests
		pe.Evidence.Unparseable = pe.Evidence.Unparseable || p.late.unparseable
	}
	pe.Recovery = Recovery{Action: action, Attempt: p.attempt, MaxRetries: p.maxRetries, Reason: reason}
	if reason == ReasonStopNow {
		pe.Recovery.By = p.stoppedBy
	}
	p.summarize(&pe, reason)
	return pe
}

// sortPrompts orders prompts as the client sent them.
func sortPrompts(ps []*prompt) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].client.Seq < ps[j].client.Seq })
}
