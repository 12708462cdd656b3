package guard

import (
	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/internal/jsonscan"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// emitter is what the guard tells: the event stream (events.go) to
// Config.Events, and notices to the client (notice.go). Every emit is
// guarded by on(): with no subscriber no event is built.
type emitter struct {
	sink    func(Event) // Config.Events; nil: none
	frames  bool        // Config.Frames: FrameObserved for every frame
	trace   bool        // Config.TraceContext
	notices string      // Config.Notices: the channel of notices
	ag      *agent      // the adapter, and the sessions' models events name
	tracker *observers.Tracker
}

func (e *emitter) on() bool { return e.sink != nil }

func (e *emitter) emit(ev Event) { e.sink(ev) }

// base is the EventBase of an event about p (nil: about no prompt).
func (e *emitter) base(c transport.Ctl, p *prompt) EventBase {
	b := EventBase{At: c.Now(), Agent: e.ag.adapter}
	if p != nil {
		b.SessionID, b.RequestID = p.session, p.client.ID
	}
	return b
}

// frame emits FrameObserved for m (Config.Frames).
func (ev *emitter) frame(c transport.Ctl, dir transport.Dir, m *transport.Msg, req *transport.Request, v transport.Verdict) {
	e := FrameObserved{EventBase: ev.base(c, nil), Dir: dir.String(), Kind: m.Kind.String(), Method: m.Method, ID: m.ID, Bytes: len(m.Line)}
	switch v {
	case transport.Drop:
		e.Route = "drop"
	case transport.Hold:
		e.Route = "hold"
	default:
		e.Route = "forward"
	}
	if req != nil {
		e.SessionID = req.SessionID
		switch {
		case req.Origin == transport.FromProxy:
			e.Proxy = true
			if p := promptOf(req.Tag); p != nil {
				e.RequestID = p.client.ID
			}
		case req.Origin == transport.FromClient && req.Method == acp.AgentMethodSessionPrompt:
			e.RequestID = req.ID
		}
	}
	if m.Method == acp.ClientMethodSessionUpdate {
		e.Update = updateName(ev.tracker.LastKind)
	}
	ev.emit(e)
}

// updateName is a session/update kind as ACP spells it.
func updateName(k observers.UpdateKind) string {
	switch k {
	case observers.UpdateMessage:
		return "agent_message_chunk"
	case observers.UpdateThought:
		return "agent_thought_chunk"
	case observers.UpdateToolCall:
		return "tool_call"
	case observers.UpdateToolCallUpdate:
		return "tool_call_update"
	case observers.UpdatePlan:
		return "plan"
	}
	return "other"
}

// promptOf is the prompt a request of acp-guard's own serves.
func promptOf(tag any) *prompt {
	switch t := tag.(type) {
	case *prompt:
		return t
	case *modelSwitch:
		return t.p
	case *compaction:
		return t.p
	}
	return nil
}

// turnStarted emits TurnStarted for a new client prompt.
func (ev *emitter) turnStarted(c transport.Ctl, p *prompt) {
	if !ev.on() {
		return
	}
	e := TurnStarted{EventBase: ev.base(c, p), Generation: p.first.Generation, Model: ev.ag.modelOf(p)}
	if ev.trace {
		e.Trace = traceContext(p.params)
	}
	ev.emit(e)
}

// attemptSent emits AttemptSent for a request of acp-guard's own.
func (ev *emitter) attemptSent(c transport.Ctl, p *prompt, kind, method, model string) {
	if ev.on() {
		ev.emit(AttemptSent{EventBase: ev.base(c, p), Kind: kind, Method: method, Attempt: p.attempt, Model: model})
	}
}

// attemptDone emits AttemptDone for the agent's answer r to req, a
// request of acp-guard's own.
func (ev *emitter) attemptDone(c transport.Ctl, req *transport.Request, r *reply) {
	if !ev.on() {
		return
	}
	e := AttemptDone{Method: req.Method, OK: r.err == nil, StopReason: r.stopReason, Error: r.err.rpc()}
	e.NotSent, _ = r.refused()
	var p *prompt
	switch t := req.Tag.(type) {
	case *prompt:
		p, e.Kind, e.Model = t, AttemptRetry, ev.ag.modelOf(t)
	case *modelSwitch:
		p, e.Kind, e.Model = t.p, AttemptSwitch, t.model
	case *compaction:
		p, e.Kind = t.p, AttemptCompaction
	default:
		return
	}
	e.EventBase, e.Attempt = ev.base(c, p), p.attempt
	ev.emit(e)
}

// classified emits FailureClassified for a prompt's failure f and what
// recovery decided about it (d).
func (ev *emitter) classified(c transport.Ctl, p *prompt, f *failure, d policy.Decision) {
	if !ev.on() {
		return
	}
	e := FailureClassified{EventBase: ev.base(c, p), Phase: PhasePrompt, Attempt: p.attempt, Model: ev.ag.modelOf(p),
		Verdict: verdictOf(f.verdict), Source: string(f.source), Error: f.rpc.rpc(), Decision: decisionOf(d)}
	if f.turn != nil {
		e.ReplaySafe, e.Evidence = f.turn.ReplaySafe(), evidenceFlags(f.turn.Evidence)
	}
	ev.emit(e)
}

// traceContext reads the W3C trace context of a session/prompt's params
// (params._meta.traceparent, tracestate, baggage).
func traceContext(params []byte) TraceContext {
	var tc TraceContext
	meta := jsonscan.Get(params, "_meta")
	if len(meta) == 0 || meta[0] != '{' {
		return tc
	}
	_ = jsonscan.Members(meta, func(key, val []byte) bool {
		switch string(key) {
		case "traceparent":
			tc.Traceparent, _ = jsonscan.String(val)
		case "tracestate":
			tc.Tracestate, _ = jsonscan.String(val)
		case "baggage":
			tc.Baggage, _ = jsonscan.String(val)
		}
		return true
	})
	return tc
}

// traceMeta is a prompt's trace context as the _meta of a request of
// acp-guard's own (a model switch, a compaction): passed on to the agent
// in the keys the client used. Nil when the prompt carried none.
func traceMeta(params []byte) map[string]any {
	tc := traceContext(params)
	if tc.Traceparent == "" {
		return nil
	}
	m := map[string]any{"traceparent": tc.Traceparent}
	if tc.Tracestate != "" {
		m["tracestate"] = tc.Tracestate
	}
	if tc.Baggage != "" {
		m["baggage"] = tc.Baggage
	}
	return m
}
