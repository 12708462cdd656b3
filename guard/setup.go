package guard

import (
	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// Set-up and launch failures: an error answer to a request that sets a session up is
// annotated with a providerError of phase "session_setup"; a set-up request
// left unanswered because the agent exited gets one of phase "launch",
// classified from the agent's stderr and exit. Neither is ever recovered
// automatically: the client must change something (a key, a login, a
// model) first.
//
// Hooks (the only places the rest of the guard calls in):
//   - AgentMsg, for a response to a client request: setupFailure.
//   - ExitData, for a pending request that is not a prompt: launchFailure.

// Phases of a providerError.
const (
	PhasePrompt       = "prompt"
	PhaseSessionSetup = "session_setup"
	PhaseLaunch       = "launch"
)

// setupMethods are the requests whose failure is a set-up failure.
var setupMethods = map[string]bool{
	acp.AgentMethodInitialize:             true,
	acp.AgentMethodAuthenticate:           true,
	acp.AgentMethodSessionNew:             true,
	acp.AgentMethodSessionLoad:            true,
	acp.AgentMethodSessionSetModel:        true,
	acp.AgentMethodSessionSetConfigOption: true,
}

// setupFailure annotates an agent's error answer to a set-up request and
// sends it to the client. ok is false (nothing done) for any other frame.
func (k *checks) setupFailure(c transport.Ctl, req *transport.Request, m *transport.Msg) (transport.Verdict, bool) {
	if m.Error == nil || !setupMethods[req.Method] {
		return transport.Forward, false
	}
	ev := classify.Evidence{
		Source: classify.SourceRPCError, Adapter: k.ag.adapter, Phase: PhaseSessionSetup,
		Now: c.Now(),
	}
	e := decodeRPCError(m.Error)
	if e.codeOK {
		ev.RPCCode = &e.Code
	}
	ev.Message, ev.Data = e.Message, e.Data
	ev.Stderr = k.tracker.WithoutNoise(c.StderrTail(), e.Message+"\n"+string(e.Data))
	pe := k.setupProviderError(c, req, ev, &e, "setup_failed")
	line := m.Line
	if ed, ok := annotateEdit(m.Line, &e, pe); ok {
		line = applyEdits(m.Line, ed)
	}
	if !c.Reply(req, line) {
		return transport.Forward, true
	}
	return transport.Drop, true
}

// launchFailure classifies the exit of an agent that left a set-up
// request unanswered; nil for any other request.
func (k *checks) launchFailure(c transport.Ctl, req *transport.Request, st transport.ExitStatus, base map[string]any) map[string]any {
	if !setupMethods[req.Method] {
		return nil
	}
	code := st.Code
	ev := classify.Evidence{
		Source: classify.SourceExit, Adapter: k.ag.adapter, Phase: PhaseLaunch,
		Stderr: k.tracker.WithoutNoise(c.StderrTail(), ""), ExitCode: &code, Signal: st.Signal, Now: c.Now(),
	}
	if st.StartErr != nil {
		ev.Message = st.StartErr.Error()
	}
	base["providerError"] = k.setupProviderError(c, req, ev, nil, "agent_exited")
	return base
}

// setupProviderError classifies ev into the providerError of a set-up or
// launch failure: never replay-safe, recovery always stop.
func (k *checks) setupProviderError(c transport.Ctl, req *transport.Request, ev classify.Evidence, e *rpcErrorObject, reason string) ProviderError {
	v := k.classify(ev)
	if k.ev.on() {
		k.ev.emit(FailureClassified{
			EventBase: EventBase{At: c.Now(), Agent: k.ag.adapter, SessionID: req.SessionID, RequestID: req.ID},
			Phase:     ev.Phase, Verdict: verdictOf(v), Source: string(ev.Source), Error: e.rpc(),
			Decision: decisionOf(policy.Decision{Action: policy.ActionStop, Reason: reason}),
		})
	}
	pe := newProviderError(v, nil, k.ag.adapter, ev.Source, c.Now())
	pe.Phase = ev.Phase
	pe.SessionID = req.SessionID
	if s := k.ag.sessions[req.SessionID]; s != nil && req.SessionID != "" {
		pe.Model = s.currentModel // what the agent said the session runs on
	}
	pe.Recovery = Recovery{Action: string(policy.ActionStop), Reason: reason}
	return pe
}
