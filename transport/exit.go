package transport

import (
	evt "github.com/acp-guard/acp-guard/event"

	"strconv"
)

// ExitStatus describes how the agent ended (package event's).
type ExitStatus = evt.ExitStatus

// OutputClosedMessage describes an agent that closed its stdout and kept
// running: the evidence a classifier sees for it (a lost transport).
const OutputClosedMessage = "agent stdout stream closed while the agent process is still running"

// agentOutputClosed answers every pending client request exactly once
// because the agent closed its stdout while still running: nothing can
// answer them any more. Hooks see it as the agent's exit
// (st.OutputClosed); later requests are answered at once.
func (r *Relay) agentOutputClosed() {
	if r.exited {
		return
	}
	r.gone(ExitStatus{Code: -1, OutputClosed: true})
}

// AgentExited answers every pending client request exactly once. Call it
// after the agent's output has been drained.
func (r *Relay) AgentExited(st ExitStatus) {
	if r.cfg.Tap != nil {
		r.cfg.Tap.Exit(st)
	}
	if r.exited {
		return
	}
	r.gone(st)
}

func (r *Relay) gone(st ExitStatus) {
	r.exited = true
	r.exit = st
	r.hooks.AgentExit(r, st)
	for _, req := range r.table.pendingClient() {
		r.answerExited(req, st)
	}
	for k, preq := range r.table.proxy {
		delete(r.table.proxy, k)
		resp := ParseMsg(ErrorResponse(preq.ID, -32603, "agent exited", nil))
		r.hooks.ProxyResponse(r, &resp, preq)
	}
	// Agent requests awaiting the client can no longer be answered usefully.
	clear(r.table.agent)
}

func (r *Relay) answerExited(req *Request, st ExitStatus) {
	if st.Stopped != 0 {
		name := SignalName(st.Stopped)
		r.Reply(req, ErrorResponse(req.ID, -32603, "acp-guard: stopped by "+name+" before the agent started; the request was not sent to the agent",
			map[string]any{"acpGuard": map[string]any{"reason": "shutting_down", "signal": name, "notSent": true}}))
		return
	}
	exit := map[string]any{"code": st.Code}
	if st.OutputClosed {
		exit = map[string]any{"outputClosed": true}
	}
	if st.Signal != "" {
		exit["signal"] = st.Signal
	}
	if st.StartErr != nil {
		exit["startError"] = r.redact(st.StartErr.Error())
	}
	if tail := r.StderrTail(); len(tail) > 0 {
		exit["stderr"] = tail
	}
	base := map[string]any{"agentExit": exit}
	data := r.hooks.ExitData(r, req, st, base)
	if data == nil {
		data = base
	}
	msg := "acp-guard: the agent exited before answering"
	switch {
	case st.StartErr != nil:
		msg = "acp-guard: the agent could not be started"
	case st.OutputClosed:
		msg = "acp-guard: the agent closed its output before answering (it is being terminated)"
	case st.Signal != "":
		msg += " (killed by signal " + st.Signal + ")"
	case st.Code >= 0:
		msg += " (exit code " + strconv.Itoa(st.Code) + ")"
	}
	r.Reply(req, ErrorResponse(req.ID, -32603, msg, data))
}

// PendingClient returns the client requests awaiting an answer.
func (r *Relay) PendingClient() []*Request { return r.table.pendingClient() }

// Idle reports whether the agent owes the client nothing: it has
// answered a client request (an ACP session is up: an agent that has not
// spoken yet may still be starting, or be a program that does its work at
// its input's end) and nothing is in flight (InFlight).
func (r *Relay) Idle() bool { return r.sessionUp && !r.InFlight() }

// InFlight reports whether the agent still owes an answer: a client
// request it has not answered, or a request of the proxy's own. A client
// request whose answer a hook holds (a prompt held for recovery) is not in
// flight: the agent answered it.
func (r *Relay) InFlight() bool {
	if len(r.table.proxy) > 0 {
		return true
	}
	for _, req := range r.table.client {
		if !req.answered {
			return true
		}
	}
	return false
}
