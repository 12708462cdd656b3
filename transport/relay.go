package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
)

// Config configures a Relay.
type Config struct {
	MaxLine int64
	Logger  *slog.Logger
	Hooks   Hooks // nil: plain relay
	Tap     Tap   // nil: no recording
	Redact  func(string) string
}

// Relay is the serialized state machine between client and agent (its
// owner calls it one event at a time, see the package documentation):
// the request table, dispatch to hooks, and the exactly-once guarantee for
// client requests. It does no I/O of its own.
type Relay struct {
	cfg    Config
	out    Output
	log    *slog.Logger
	hooks  Hooks
	table  *requestTable
	ring   *ring
	exited bool // the agent is gone or closed its stdout: nothing will answer
	exit   ExitStatus
	// stopping: acp-guard was told to stop (a signal); no request of the
	// proxy's own is sent to the agent any more.
	stopping bool
	msg      Msg // the frame being handled; hooks must not keep the pointer
	// early holds client requests the proxy answered before the agent did:
	// the agent's late response must not reach the client a second time.
	early  map[IDKey]bool
	closed bool // client input ended
	// sessionUp: the agent has answered a client request — an ACP session
	// is up (Idle).
	sessionUp bool
	Counts    Counts
	redact    func(string) string
	// answeredClient and answeredAgent remember the latest answered
	// requests of each side, to tell a duplicate answer from a stray one
	// (answers.go).
	answeredClient, answeredAgent recentKeys
}

// stderrTailLines is how many agent stderr lines the relay keeps for
// evidence and for the error data of requests left unanswered.
const stderrTailLines = 40

// NewRelay returns a relay writing to out.
func NewRelay(cfg Config, out Output) *Relay {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Hooks == nil {
		cfg.Hooks = NopHooks{}
	}
	redact := cfg.Redact
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &Relay{cfg: cfg, out: out, log: cfg.Logger, hooks: cfg.Hooks, table: newRequestTable(), ring: newRing(stderrTailLines), redact: redact}
}

// FromClient handles one line read from the client.
func (r *Relay) FromClient(l Line) {
	if l.oversize > 0 {
		r.clientOversize(l)
		return
	}
	if !endsLine(l.Bytes) {
		var ok bool
		if l.Bytes, ok = r.lastLine(C2A, l.Bytes); !ok {
			return
		}
		l.area = nil // lastLine made a copy
	}
	r.Counts.ClientFrames++
	r.msg.parse(l.Bytes)
	m := &r.msg
	var req *Request
	switch m.Kind {
	case KindInvalid:
		r.Counts.InvalidFromClient++
		if r.log.Enabled(context.Background(), slog.LevelDebug) {
			r.log.Debug("client line is not JSON; forwarded", "dir", "c2a", "bytes", len(l.Bytes), "line", r.escapeForLog(l.Bytes, 200))
		}
	case KindRequest:
		if isProxyKey(KeyOf(m.ID)) {
			// The proxy's own namespace: answering it would be ambiguous.
			r.log.Warn("client used a reserved request id; refused", "id", string(m.ID))
			r.tapIn(C2A, l.Bytes, true)
			r.emit(A2C, ErrorResponse(m.ID, -32600, "acp-guard: request ids starting with \""+ProxyIDPrefix+"\" are reserved for the proxy", nil))
			return
		}
		delete(r.early, KeyOf(m.ID)) // a new request with that id supersedes
		var dup bool
		params, area := r.keepParams(&l, m)
		req, dup = r.table.add(FromClient, m, r.out.Now(), params)
		if req != nil {
			req.keep = area
		}
		if dup {
			r.log.Warn("client reused the id of a pending request", "method", m.Method, "id", string(m.ID))
		}
		if r.exited {
			// Nothing will answer it: do so now, exactly once.
			r.tapIn(C2A, l.Bytes, true)
			r.answerExited(req, r.exit)
			return
		}
	case KindResponse:
		var ok bool
		if req, ok = r.clientAnswer(m, l.Bytes); !ok {
			return
		}
	}
	v := r.hooks.ClientMsg(r, m, req)
	if v != Forward {
		r.Counts.Dropped++
		r.tapIn(C2A, l.Bytes, true)
		return
	}
	r.tapIn(C2A, l.Bytes, false)
	r.out.WriteAgent(r.withRequestID(m, req))
}

// FromAgent handles one line read from the agent.
func (r *Relay) FromAgent(l Line) {
	if l.oversize > 0 {
		r.agentOversize(l)
		return
	}
	if !endsLine(l.Bytes) {
		var ok bool
		if l.Bytes, ok = r.lastLine(A2C, l.Bytes); !ok {
			return
		}
	}
	r.Counts.AgentFrames++
	r.msg.parse(l.Bytes)
	m := &r.msg
	var req *Request
	switch m.Kind {
	case KindInvalid:
		r.Counts.InvalidFromAgent++
		if r.log.Enabled(context.Background(), slog.LevelDebug) {
			r.log.Debug("agent line is not JSON; forwarded", "dir", "a2c", "bytes", len(l.Bytes), "line", r.escapeForLog(l.Bytes, 200))
		}
	case KindRequest:
		var dup bool
		req, dup = r.table.add(FromAgent, m, r.out.Now(), nil)
		if dup {
			r.log.Warn("agent reused the id of a pending request", "method", m.Method, "id", string(m.ID))
		}
	case KindResponse:
		key := KeyOf(m.ID)
		if preq, ok := r.table.proxy[key]; ok {
			delete(r.table.proxy, key)
			r.tapIn(A2C, l.Bytes, true)
			r.hooks.ProxyResponse(r, m, preq)
			return
		}
		if isProxyKey(key) {
			// A second answer to a request of the proxy's own (or one to
			// a request it never sent): its id means nothing to the client.
			r.Counts.DuplicateProxyAnswers++
			r.Counts.Dropped++
			r.tapIn(A2C, l.Bytes, true)
			r.log.Warn("agent answered a proxy request that is not pending; dropped", "id", string(m.ID))
			return
		}
		var ok bool
		if req, ok = r.agentAnswer(m, l.Bytes); !ok {
			return
		}
	}
	v := r.hooks.AgentMsg(r, m, req)
	if m.Kind == KindResponse && req != nil && v != Hold {
		delete(r.table.client, req.Key)
		r.answeredClient.add(req.Key)
	}
	if v != Forward {
		r.Counts.Dropped++
		r.tapIn(A2C, l.Bytes, true)
		return
	}
	r.tapIn(A2C, l.Bytes, false)
	r.out.WriteClient(r.withRequestID(m, req))
}

// keepParams returns the params a client request keeps, when a hook asks
// for them (nil otherwise): a copy of a short line's; for a long line, the
// params span of the line itself, in its mapping, which the request then
// holds (lineArea.keep) — the line is held once.
func (r *Relay) keepParams(l *Line, m *Msg) ([]byte, *lineArea) {
	if m.Params == nil || !r.hooks.KeepParams(m.Method) {
		return nil, nil
	}
	if l.area == nil {
		return append([]byte(nil), m.Params...), nil
	}
	l.area.keep()
	return m.Params, l.area
}

// withRequestID returns the frame to forward for m: unchanged, unless m is
// a response whose id is spelled differently from its request's (2.0 for
// 2); then the peer gets its own id bytes back.
func (r *Relay) withRequestID(m *Msg, req *Request) []byte {
	if m.Kind != KindResponse || req == nil || bytes.Equal(m.ID, req.ID) {
		return m.Line
	}
	off := cap(m.Line) - cap(m.ID) // m.ID is a span of m.Line
	if off < 0 || off+len(m.ID) > len(m.Line) || !bytes.Equal(m.Line[off:off+len(m.ID)], m.ID) {
		return m.Line
	}
	line := make([]byte, 0, len(m.Line)-len(m.ID)+len(req.ID))
	line = append(line, m.Line[:off]...)
	line = append(line, req.ID...)
	line = append(line, m.Line[off+len(m.ID):]...)
	r.Counts.IDsRestored++
	return line
}

func isProxyKey(k IDKey) bool {
	return strings.HasPrefix(string(k), "s:"+ProxyIDPrefix)
}

// endsLine reports whether b ends with its line terminator. Only the last
// line of a stream can lack it.
// Stderr handles one agent stderr line (already stripped of ANSI escapes).
func (r *Relay) Stderr(line string) {
	r.ring.add(line)
	if r.cfg.Tap != nil {
		r.cfg.Tap.Stderr(line)
	}
	r.hooks.Stderr(r, line)
}

// ClientClosed records that the client's input ended.
func (r *Relay) ClientClosed() {
	if r.closed {
		return
	}
	r.closed = true
	r.hooks.ClientClosed(r)
}

// Stopping records that acp-guard is shutting down on a signal: from now
// on Call refuses to send requests of the proxy's own (a retry must not
// start after the user asked to stop); its owner gets an error response.
// Hooks that implement StopHook are told once, so that work they hold
// (a scheduled retry) is answered now rather than when the agent is gone.
func (r *Relay) Stopping() {
	if r.stopping {
		return
	}
	r.stopping = true
	if t, ok := r.cfg.Tap.(StopTap); ok {
		t.Stopping()
	}
	if h, ok := r.hooks.(StopHook); ok {
		h.Stopping(r)
	}
}

// StopTap is an optional extension of Tap: Stopping is told, once and
// before the hooks, when the relay starts stopping (Relay.Stopping), so a

// ErrorResponse builds a JSON-RPC error response frame (newline included).
func ErrorResponse(id []byte, code int, message string, data any) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	if len(id) == 0 {
		b.WriteString("null")
	} else {
		b.Write(id)
	}
	b.WriteString(`,"error":{"code":`)
	b.WriteString(strconv.Itoa(code))
	b.WriteString(`,"message":`)
	mb, _ := json.Marshal(message)
	b.Write(mb)
	if data != nil {
		db, err := json.Marshal(data)
		if err == nil {
			b.WriteString(`,"data":`)
			b.Write(db)
		}
	}
	b.WriteString("}}\n")
	return b.Bytes()
}

// escapeForLog redacts, bounds and escapes a payload for a log line. A
// larger head than is shown is redacted first, so a secret that starts
// before the cut is replaced whole, never half-kept.
func (r *Relay) escapeForLog(b []byte, max int) string {
	if len(b) > 4*max {
		b = b[:4*max]
	}
	s := r.redact(string(b))
	if len(s) > max {
		s = s[:max]
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
