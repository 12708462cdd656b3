package transport

import (
	"log/slog"
	"strconv"
	"time"
)

// The Relay as its hooks' Ctl: what a hook may do, and the one place the
// proxy's own frames leave (emit).

// Ctl interface.

func (r *Relay) Now() time.Time    { return r.out.Now() }
func (r *Relay) Log() *slog.Logger { return r.log }

// StderrTail returns the last stderr lines, redacted. Lines are kept raw
// and redacted only here, when they are needed, so a stderr flood costs the
// loop no regular-expression work.
func (r *Relay) StderrTail() []string {
	lines := r.ring.lines()
	for i, l := range lines {
		lines[i] = r.redact(l)
	}
	return lines
}

func (r *Relay) ToClient(line []byte) {
	r.Counts.Injected++
	r.emit(A2C, line)
}

func (r *Relay) ToAgent(line []byte) {
	if r.exited {
		return
	}
	r.Counts.Injected++
	r.emit(C2A, line)
}

func (r *Relay) Pending(req *Request) bool {
	cur, ok := r.table.client[req.Key]
	return ok && cur == req
}

func (r *Relay) Reply(req *Request, line []byte) bool {
	if !r.Pending(req) {
		r.log.Warn("reply to a request that is not pending", "method", req.Method, "id", string(req.ID))
		return false
	}
	delete(r.table.client, req.Key)
	r.answeredClient.add(req.Key)
	if !req.answered {
		if r.early == nil {
			r.early = make(map[IDKey]bool)
		}
		r.early[req.Key] = true
	}
	r.Counts.Rewritten++
	r.emit(A2C, line)
	return true
}

func (r *Relay) Call(method, sessionID string, params []byte, tag any) *Request {
	req := r.table.newProxy(method, sessionID, r.out.Now())
	req.Tag = tag
	line := make([]byte, 0, len(params)+len(method)+64)
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	line = append(line, req.ID...)
	line = append(line, `,"method":`...)
	line = strconv.AppendQuote(line, method)
	if params != nil {
		line = append(line, `,"params":`...)
		line = append(line, params...)
	}
	line = append(line, "}\n"...)
	if r.exited || r.stopping {
		// The agent is gone, or acp-guard is shutting down (no new attempt
		// may start after a signal): answer the proxy's own request with
		// an error at once so its owner does not wait forever and answers
		// its client request.
		msg, reason := "agent exited", "agent_exited"
		if !r.exited {
			msg, reason = "acp-guard is shutting down (signal received); request not sent to the agent", "shutting_down"
		}
		// data.acpGuard.reason lets the owner tell the refusal from an
		// answer of the agent's.
		resp := ParseMsg(ErrorResponse(req.ID, -32603, msg, map[string]any{"acpGuard": map[string]any{"reason": reason, "notSent": true}}))
		delete(r.table.proxy, req.Key)
		r.log.Info("proxy request not sent", "method", method, "reason", msg)
		r.hooks.ProxyResponse(r, &resp, req)
		return req
	}
	r.tapOut(C2A, line)
	r.out.WriteAgent(line)
	return req
}

func (r *Relay) After(d time.Duration, fire func()) func() bool {
	return r.out.Schedule(d, fire)
}

// emit writes a frame of acp-guard's own (made or rewritten by it) to
// dir's peer: the one place such frames leave, so the one place they are
// made valid UTF-8 (validFrame). The retry of a client's prompt (Call) is
// the client's bytes and leaves as they came.
func (r *Relay) emit(dir Dir, line []byte) {
	line = validFrame(line)
	r.tapOut(dir, line)
	if dir == A2C {
		r.out.WriteClient(line)
	} else {
		r.out.WriteAgent(line)
	}
}

func (r *Relay) tapOut(dir Dir, line []byte) {
	if r.cfg.Tap != nil {
		r.cfg.Tap.Frame(dir, line, ViaGuard, false)
	}
}

func (r *Relay) tapIn(dir Dir, line []byte, suppressed bool) {
	if r.cfg.Tap != nil {
		r.cfg.Tap.Frame(dir, line, ViaPeer, suppressed)
	}
}
