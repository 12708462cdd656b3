package guard

import (
	"context"
	"encoding/json"
	"fmt"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// switcher does the work of the switching state: it picks the fallback
// model (with circuits, one whose circuit is not cooling down), asks the
// agent to switch, and follows the agent's answer. Its results are armed
// under the prompt's fence (fence.go).
type switcher struct {
	m    *machine
	rc   *recovery
	circ *circuitClient
	ag   *agent
	ev   *emitter
}

// modelSwitch is the tag of acp-guard's own model-switch request.
type modelSwitch struct {
	p     *prompt
	model string
	f     fence // the switching state it was sent in
}

// switchTo starts the model switch a skip scheduled. With circuits, the
// fallback models left are read from the store first (off the event
// loop): one whose circuit is cooling down is skipped, unless a transient
// failure opened it and its cooldown ends within probeWindow (a cooldown
// probe). When every model left is cooling down, the prompt stops with
// circuit_open.
func (sw *switcher) switchTo(c transport.Ctl, p *prompt, next string) {
	cl := sw.circ
	if !cl.on() || p.last == nil {
		sw.switchModel(c, p, next)
		return
	}
	cands := sw.ag.candidates(p)
	if len(cands) == 0 || cands[0] != next {
		cands = append([]string{next}, cands...)
	}
	keys := make([]circuit.Key, len(cands))
	for i, m := range cands {
		keys[i] = cl.key(m, p.last.verdict.Scope)
	}
	f, now, cc := sw.m.fence(p), c.Now(), cl.cc
	cl.w.do(c, func() func() {
		recs := make([]*circuit.Record, len(keys))
		for i, k := range keys {
			rec, _, err := cc.Get(context.Background(), k, now)
			if err != nil {
				cl.log.Debug("circuit get", "key", k.String(), "err", err)
			}
			recs[i] = rec
		}
		return f.then(func() { sw.pickFallback(c, p, cands, keys, recs) })
	})
}

// pickFallback switches to the first candidate that is not cooling down.
func (sw *switcher) pickFallback(c transport.Ctl, p *prompt, cands []string, keys []circuit.Key, recs []*circuit.Record) {
	if !c.Pending(p.client) {
		return
	}
	now := c.Now()
	for i, m := range cands {
		if !coolingDown(recs[i], now) {
			sw.switchModel(c, p, m)
			return
		}
		p.tried = append(p.tried, m)
		snap := recs[i].SnapshotAt(keys[i], now)
		if sw.ev.on() {
			sw.ev.emit(CircuitDecision{EventBase: sw.ev.base(c, p), Decision: CircuitSkipModel, Key: keys[i].String(), Model: m,
				Until: recs[i].OpenUntil, Circuit: snap})
		}
		if p.circ.circuit == nil {
			p.circ.circuit = &snap
		}
	}
	sw.rc.stopWith(c, p, onNoCandidate, ReasonCircuitOpen, false)
}

// switchModel asks the agent to change the session's model.
func (sw *switcher) switchModel(c transport.Ctl, p *prompt, model string) {
	info := sw.ag.session(p.session)
	if info.currentModel != "" && !contains(p.tried, info.currentModel) {
		p.tried = append(p.tried, info.currentModel)
	}
	p.tried = append(p.tried, model)
	tag := &modelSwitch{p: p, model: model, f: sw.m.fence(p)}
	if f := p.last; f != nil {
		sw.ev.say(c, p, fmt.Sprintf("%s — switching to model %s", humanCode(f.verdict.Code), model), map[string]any{
			"action": "switch", "model": model, "code": f.verdict.Code, "class": string(f.verdict.Class),
			"attempt": p.attempt, "maxRetries": p.maxRetries,
		}, NoticeSent{Action: "switch", Attempt: p.attempt, MaxRetries: p.maxRetries, Code: f.verdict.Code, Class: string(f.verdict.Class), Model: model})
	}
	// The prompt's trace context goes on to the agent with the switch.
	meta := traceMeta(p.params)
	if contains(info.models, model) {
		params, _ := json.Marshal(struct {
			SessionID string         `json:"sessionId"`
			ModelID   string         `json:"modelId"`
			Meta      map[string]any `json:"_meta,omitempty"`
		}{p.session, model, meta})
		sw.ev.attemptSent(c, p, AttemptSwitch, acp.AgentMethodSessionSetModel, model)
		c.Call(acp.AgentMethodSessionSetModel, p.session, params, tag)
		return
	}
	params, _ := json.Marshal(struct {
		SessionID string         `json:"sessionId"`
		ConfigID  string         `json:"configId"`
		Value     string         `json:"value"`
		Meta      map[string]any `json:"_meta,omitempty"`
	}{p.session, info.modelOption, model, meta})
	sw.ev.attemptSent(c, p, AttemptSwitch, acp.AgentMethodSessionSetConfigOption, model)
	c.Call(acp.AgentMethodSessionSetConfigOption, p.session, params, tag)
}

// switched continues after a model switch: a new route cycle on the new
// candidate, retried at once; a refused switch stops. The agent's answer
// acts on the prompt only under the fence the switch was sent with.
func (sw *switcher) switched(c transport.Ctl, s *modelSwitch, r *reply) {
	p := s.p
	if r.err == nil {
		// The agent's model changed, whatever became of the prompt.
		sw.ag.session(p.session).currentModel = s.model
	}
	if !s.f.live() || !c.Pending(p.client) {
		return
	}
	if r.err != nil {
		reason := ReasonSwitchFailed
		if why, ok := r.refused(); ok {
			reason = why
		}
		sw.rc.stopWith(c, p, onSwitchFailed, reason, false)
		return
	}
	p.model = s.model
	p.route = policy.Route{}
	sw.circ.dispatchDue(c, p) // asks the new model's circuit first, when there is one
}
