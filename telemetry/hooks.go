//go:build !nootel

package telemetry

import (
	"strconv"
	"time"

	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/internal/jsonscan"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

type evKind uint8

const (
	evPrompt    evKind = iota // a client session/prompt arrived
	evAnswer                  // the agent answered a session/prompt (client's or proxy's)
	evCall                    // the proxy sent a request of its own
	evProxyDone               // the agent answered a proxy request
	evNotice                  // the guard sent a retry/wait notice
	evAttempt                 // an attempt-log record
	evTurn                    // a TurnReport
	evAdapter                 // initialize's agentInfo.name
	evModel                   // a session's current model (session/new, load, resume)
	evLate                    // late output of an answered prompt (value: adapter; delayMs: chunks)
)

// event is what crosses the queue: copies only, nothing that the relay
// reuses.
type event struct {
	kind    evKind
	at      time.Time
	session string
	key     transport.IDKey // client request (evPrompt, evTurn) or proxy request
	method  string
	value   string // evCall: model; evAdapter: name; evModel: model; evNotice: action
	ok      bool
	rpcCode int64
	delayMs int64
	rec     *policy.Record
	report  *guard.TurnReport
}

// Hooks wraps the guard's relay hooks so the telemetry sees prompts,
// answers and the proxy's own requests. It adds no work to frames other
// than a method comparison.
func (t *Telemetry) Hooks(inner transport.Hooks) transport.Hooks {
	return &hooks{Hooks: inner, t: t}
}

type hooks struct {
	transport.Hooks
	t   *Telemetry
	ctl *ctlTap // wraps the relay's Ctl; made once (the relay is one)
}

func (h *hooks) wrap(c transport.Ctl) transport.Ctl {
	if h.ctl == nil || h.ctl.Ctl != c {
		h.ctl = &ctlTap{Ctl: c, t: h.t}
	}
	return h.ctl
}

func (h *hooks) ClientMsg(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	if m.Kind == transport.KindRequest && req != nil && m.Method == "session/prompt" {
		h.t.emit(event{kind: evPrompt, at: c.Now(), session: req.SessionID, key: req.Key})
	}
	return h.Hooks.ClientMsg(h.wrap(c), m, req)
}

func (h *hooks) AgentMsg(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	if m.Kind == transport.KindResponse && req != nil && req.Origin == transport.FromClient {
		h.response(c, m, req)
	}
	return h.Hooks.AgentMsg(h.wrap(c), m, req)
}

// response notes the answers the telemetry needs: prompts (for wait
// times), initialize (adapter) and session set-up (model).
func (h *hooks) response(c transport.Ctl, m *transport.Msg, req *transport.Request) {
	switch req.Method {
	case "session/prompt":
		h.t.emit(event{kind: evAnswer, at: c.Now(), session: req.SessionID, key: req.Key, ok: m.Error == nil})
	case "initialize":
		if name, ok := jsonscan.String(jsonscan.Get(m.Result, "agentInfo", "name")); ok {
			h.t.emit(event{kind: evAdapter, value: name})
		}
	case "session/new", "session/load", "session/resume":
		sid := req.SessionID
		if s, ok := jsonscan.String(jsonscan.Get(m.Result, "sessionId")); ok {
			sid = s
		}
		if model, ok := jsonscan.String(jsonscan.Get(m.Result, "models", "currentModelId")); ok {
			h.t.emit(event{kind: evModel, session: sid, value: model})
		}
	}
}

func (h *hooks) ProxyResponse(c transport.Ctl, m *transport.Msg, req *transport.Request) {
	e := event{kind: evProxyDone, at: c.Now(), session: req.SessionID, key: req.Key, method: req.Method, ok: m.Error == nil}
	if m.Error != nil {
		e.rpcCode, _ = jsonInt(jsonscan.Get(m.Error, "code"))
	}
	h.t.emit(e)
	h.Hooks.ProxyResponse(h.wrap(c), m, req)
}

func (h *hooks) Stderr(c transport.Ctl, line string) { h.Hooks.Stderr(h.wrap(c), line) }
func (h *hooks) AgentExit(c transport.Ctl, st transport.ExitStatus) {
	h.Hooks.AgentExit(h.wrap(c), st)
}
func (h *hooks) ExitData(c transport.Ctl, req *transport.Request, st transport.ExitStatus, base map[string]any) map[string]any {
	return h.Hooks.ExitData(h.wrap(c), req, st, base)
}
func (h *hooks) ClientClosed(c transport.Ctl) { h.Hooks.ClientClosed(h.wrap(c)) }

// Stopping forwards the relay's optional StopHook (a stop signal) to the
// wrapped hooks, which would otherwise never hear of it.
func (h *hooks) Stopping(c transport.Ctl) {
	if s, ok := h.Hooks.(transport.StopHook); ok {
		s.Stopping(h.wrap(c))
	}
}

// ctlTap sees the guard's own requests and notices.
type ctlTap struct {
	transport.Ctl
	t *Telemetry
}

func (c *ctlTap) Call(method, sessionID string, params []byte, tag any) *transport.Request {
	at := c.Now()
	req := c.Ctl.Call(method, sessionID, params, tag)
	e := event{kind: evCall, at: at, session: sessionID, key: req.Key, method: method}
	switch method {
	case "session/set_model":
		e.value, _ = jsonscan.String(jsonscan.Get(params, "modelId"))
	case "session/set_config_option":
		e.value, _ = jsonscan.String(jsonscan.Get(params, "value"))
	}
	// Emitted after Call: an agent already gone answers synchronously, and
	// the worker tolerates an answer it has not seen the call of.
	c.t.emit(e)
	return req
}

// Poster forwards the relay's optional Poster, which the guard finds by a
// type assertion on its Ctl (to write the attempt log off the relay's
// goroutine); a wrapper that hid it would put disk writes back on the
// relay. Any other optional Ctl interface must be forwarded here too.
func (c *ctlTap) Poster() func(func()) {
	if p, ok := c.Ctl.(interface{ Poster() func(func()) }); ok {
		return p.Poster()
	}
	return nil
}

func (c *ctlTap) ToClient(line []byte) {
	if r := jsonscan.Get(line, "params", "update", "_meta", "acpGuard", "retry"); r != nil {
		sid, _ := jsonscan.String(jsonscan.Get(line, "params", "sessionId"))
		action, _ := jsonscan.String(jsonscan.Get(r, "action"))
		delay, _ := jsonInt(jsonscan.Get(r, "delayMs"))
		c.t.emit(event{kind: evNotice, at: c.Now(), session: sid, value: action, delayMs: delay})
	}
	c.Ctl.ToClient(line)
}

// Attempts tees the guard's attempt log (inner may be nil) into the
// telemetry: one event per decision. Errors are inner's.
func (t *Telemetry) Attempts(inner guard.AttemptLog) guard.AttemptLog {
	return &attempts{inner: inner, t: t}
}

type attempts struct {
	inner guard.AttemptLog
	t     *Telemetry
}

func (a *attempts) Append(r policy.Record) error {
	rec := r
	rec.Policy = policy.Document{} // not needed here
	a.t.emit(event{kind: evAttempt, at: r.Time, session: r.SessionID, key: transport.KeyOf([]byte(r.RequestID)), rec: &rec})
	if a.inner == nil {
		return nil
	}
	return a.inner.Append(r)
}

// Late is the guard's Config.OnLate: late output is counted (the turn's
// span has ended by then).
func (t *Telemetry) Late(l guard.LateOutput) {
	at := l.At
	if at.IsZero() {
		at = time.Now()
	}
	t.emit(event{kind: evLate, at: at, session: l.SessionID, value: l.Adapter, delayMs: int64(l.Chunks)})
}

// Turn is the guard's Config.OnTurn.
func (t *Telemetry) Turn(r guard.TurnReport) {
	at := r.At
	if at.IsZero() {
		at = time.Now()
	}
	t.emit(event{kind: evTurn, at: at, session: r.SessionID, key: transport.KeyOf(r.RequestID), report: &r})
}

func jsonInt(raw []byte) (int64, error) { return strconv.ParseInt(string(raw), 10, 64) }
