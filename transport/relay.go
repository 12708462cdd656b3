package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acp-guard/acp-guard/internal/jsonscan"
)

// Verdict is what a hook decides about a frame.
type Verdict uint8

const (
	Forward Verdict = iota // pass the frame on unchanged
	Drop                   // do not forward (the hook answered or suppressed it)
	Hold                   // responses only: do not forward and keep the client request pending
)

// Via marks who produced a frame that is written.
type Via uint8

const (
	ViaPeer  Via = iota // the frame is the peer's own, unchanged
	ViaGuard            // acp-guard produced or rewrote it
)

// Dir is a direction on the wire.
type Dir uint8

const (
	C2A Dir = iota // client → agent
	A2C            // agent → client
)

func (d Dir) String() string {
	if d == C2A {
		return "c2a"
	}
	return "a2c"
}

// ExitStatus describes how the agent ended.
type ExitStatus struct {
	Code     int    // exit code; 128+N when killed by signal N
	Signal   string // e.g. "killed", "terminated" — empty when it exited
	StartErr error  // the agent could not be started
	// Stopped: acp-guard was told to stop, by this signal, before it
	// started the agent; the agent never ran (Code is 128+N).
	Stopped syscall.Signal
	// OutputClosed: the agent closed its stdout while still running. It
	// can answer nothing more; it is terminated after the grace period,
	// and Code and Signal are not known yet (Code is -1).
	OutputClosed bool
}

// OutputClosedMessage describes an agent that closed its stdout and kept
// running: the evidence a classifier sees for it (a lost transport).
const OutputClosedMessage = "agent stdout stream closed while the agent process is still running"

// Output is where a Relay's decisions go: the live event loop writes to
// pipes; the offline player records them.
type Output interface {
	Now() time.Time
	WriteClient(line []byte)
	WriteAgent(line []byte)
	// Schedule arranges for fire to run after d, serialized with every
	// other event like a frame. The returned stop reports whether it
	// prevented the call.
	Schedule(d time.Duration, fire func()) (stop func() bool)
}

// Tap observes every frame that crosses the relay (for transcripts).
// suppressed: an inbound frame that was not forwarded. via: who wrote an
// outbound frame.
type Tap interface {
	Frame(dir Dir, line []byte, via Via, suppressed bool)
	Stderr(line string)
	Exit(st ExitStatus)
}

// Hooks is where observation, projection and recovery plug in. Calls are
// serialized by the event loop's mutex — one at a time, in arrival order
// per stream, from whichever goroutine read the event (see doc.go) — and
// must not block: no I/O, no waiting.
type Hooks interface {
	// ClientMsg sees a client frame before it is forwarded. For a client
	// request, req is its new table entry; for a client response, req is the
	// agent request it answers (nil if unknown).
	ClientMsg(c Ctl, m *Msg, req *Request) Verdict
	// AgentMsg sees an agent frame before it is forwarded. For a response,
	// req is the pending client request it answers (nil if unknown). For an
	// agent request, req is its new table entry. An oversized, discarded
	// line arrives as KindInvalid with a nil Line.
	AgentMsg(c Ctl, m *Msg, req *Request) Verdict
	// ProxyResponse receives the agent's answer to a Ctl.Call.
	ProxyResponse(c Ctl, m *Msg, req *Request)
	// Stderr sees each agent stderr line (ANSI stripped).
	Stderr(c Ctl, line string)
	// AgentExit runs once the agent is gone and its output is drained,
	// before pending client requests are answered — or, once only and
	// earlier, when the agent closed its stdout while still running
	// (st.OutputClosed): it can answer nothing more either way.
	AgentExit(c Ctl, st ExitStatus)
	// ExitData returns the error data for a client request left pending
	// when the agent exited (nil: the default). Called once per request.
	ExitData(c Ctl, req *Request, st ExitStatus, base map[string]any) map[string]any
	// ClientClosed runs when the client's input ends.
	ClientClosed(c Ctl)
	// KeepParams reports whether a client request's params must be kept.
	KeepParams(method string) bool
}

// Ctl is what hooks may do.
type Ctl interface {
	Now() time.Time
	Log() *slog.Logger
	// ToClient writes a frame of the proxy's own to the client.
	ToClient(line []byte)
	// ToAgent writes a notification of the proxy's own to the agent (no
	// answer is expected; nothing is written once the agent has exited).
	ToAgent(line []byte)
	// Reply answers a pending client request with line (a full response
	// frame, terminator included) and removes it from the table. It returns
	// false, writing nothing, when the request is no longer pending.
	Reply(req *Request, line []byte) bool
	// Call sends a request of the proxy's own to the agent; the answer goes
	// to Hooks.ProxyResponse and never to the client.
	Call(method string, sessionID string, params []byte, tag any) *Request
	// After runs fire after d, serialized like every hook call, unless
	// stopped.
	After(d time.Duration, fire func()) (stop func() bool)
	// StderrTail returns the last stderr lines (redacted).
	StderrTail() []string
	// Pending reports whether a client request still awaits its answer.
	Pending(req *Request) bool
}

// Config configures a Relay.
type Config struct {
	MaxLine  int64
	Logger   *slog.Logger
	Hooks    Hooks // nil: plain relay
	Tap      Tap   // nil: no recording
	Redact   func(string) string
	RingSize int // stderr lines kept (default 40)
}

// Relay is the serialized state machine between client and agent (its
// owner calls it one event at a time, see doc.go):
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
	Counts Counts
	redact func(string) string
	// answeredClient and answeredAgent remember the latest answered
	// requests of each side, to tell a duplicate answer from a stray one
	// (answers.go).
	answeredClient, answeredAgent recentKeys
}

// Counts are relay statistics.
type Counts struct {
	ClientFrames, AgentFrames uint64
	InvalidFromClient         uint64
	InvalidFromAgent          uint64
	OversizeFromClient        uint64
	OversizeFromAgent         uint64
	// Fragments: a stream's last line, cut off without its newline and
	// not a complete frame (never forwarded).
	FragmentsFromClient, FragmentsFromAgent uint64
	// DuplicateProxyAnswers counts agent responses to proxy requests
	// that were no longer pending (dropped).
	DuplicateProxyAnswers uint64
	// Answers nobody was owed, dropped (answers.go): a second answer to a
	// request already answered, or one to an id never sent or no longer
	// pending — the agent's to client requests, the client's to agent
	// requests.
	DuplicateAnswersFromAgent, StrayAnswersFromAgent   uint64
	DuplicateAnswersFromClient, StrayAnswersFromClient uint64
	// IDsRestored counts responses forwarded with the id bytes of their
	// request because the peer spelled the id differently (2.0 for 2).
	IDsRestored                  uint64
	Rewritten, Injected, Dropped uint64
	// StderrDropped counts agent stderr lines that reached our stderr but
	// not the evidence, because the loop was busy (set by Run).
	StderrDropped uint64
}

// NewRelay returns a relay writing to out.
func NewRelay(cfg Config, out Output) *Relay {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Hooks == nil {
		cfg.Hooks = NopHooks{}
	}
	if cfg.RingSize <= 0 {
		cfg.RingSize = 40
	}
	redact := cfg.Redact
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &Relay{cfg: cfg, out: out, log: cfg.Logger, hooks: cfg.Hooks, table: newRequestTable(), ring: newRing(cfg.RingSize), redact: redact}
}

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

// FromClient handles one line read from the client.
func (r *Relay) FromClient(l Line) {
	if l.Oversize > 0 {
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
	r.msg = ParseMsg(l.Bytes)
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
		req, dup = r.table.add(FromClient, m, r.out.Now(), r.keepParams(&l, m))
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
	if l.Oversize > 0 {
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
	r.msg = ParseMsg(l.Bytes)
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
// line is moved off its mapping onto the heap (l and m follow it) and the
// request keeps its params span — one copy of the line, not two.
func (r *Relay) keepParams(l *Line, m *Msg) []byte {
	if m.Params == nil || !r.hooks.KeepParams(m.Method) {
		return nil
	}
	if l.area == nil {
		return append([]byte(nil), m.Params...)
	}
	l.Bytes = l.area.toHeap(l.Bytes)
	l.area = nil
	m.rebase(l.Bytes)
	return m.Params
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
func endsLine(b []byte) bool { return len(b) > 0 && b[len(b)-1] == '\n' }

// lastLine handles the final line of a stream that ended without a
// newline. A complete JSON object is a frame: it is returned with the
// newline added, so the next frame written after it starts on a fresh
// line. Anything else is a fragment (the peer died or was killed
// mid-write): it is never forwarded — half a frame followed by the next
// one on the same line would corrupt both — but counted, logged, recorded
// as a suppressed frame and, from the agent, shown to the hooks as an
// unparseable line. A client fragment whose id can be read gets a parse
// error. A blank remainder is not a frame at all.
func (r *Relay) lastLine(dir Dir, b []byte) ([]byte, bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, false
	}
	if m := ParseMsg(b); m.Kind != KindInvalid {
		return append(b[:len(b):len(b)], '\n'), true
	}
	r.tapIn(dir, b, true)
	r.log.Warn("line cut off at end of input (no newline, not a complete frame); not forwarded", "dir", dir.String(), "bytes", len(b))
	if dir == A2C {
		r.Counts.FragmentsFromAgent++
		m := Msg{Kind: KindInvalid, Line: b}
		r.hooks.AgentMsg(r, &m, nil)
		return nil, false
	}
	r.Counts.FragmentsFromClient++
	if id := oversizeID(Line{Head: b}); id != nil {
		r.emit(A2C, ErrorResponse(id, -32700, "acp-guard: the frame ended without a newline at end of input and is not complete JSON; discarded", nil))
	}
	return nil, false
}

var tailIDRe = regexp.MustCompile(`"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")\s*\}\s*$`)

// oversizeID finds the id of a discarded line from its head (top-level
// members before the big value) or, failing that, its tail.
func oversizeID(l Line) []byte {
	var id []byte
	_ = jsonscan.Members(trimEOL(l.Head), func(key, val []byte) bool {
		if string(key) == "id" {
			id = append([]byte(nil), val...)
			return false
		}
		return true
	})
	if id == nil {
		if m := tailIDRe.FindSubmatch(trimEOL(l.Tail)); m != nil {
			id = append([]byte(nil), m[1]...)
		}
	}
	return id
}

func (r *Relay) agentOversize(l Line) {
	r.Counts.OversizeFromAgent++
	id := oversizeID(l)
	r.log.Error("agent line exceeds the line cap; discarded", "dir", "a2c", "bytes", l.Oversize, "max", r.cfg.MaxLine, "id", string(id))
	m := Msg{Kind: KindInvalid}
	r.hooks.AgentMsg(r, &m, nil)
	if id == nil || isCall(l) {
		return
	}
	key := KeyOf(id)
	if preq, ok := r.table.proxy[key]; ok {
		// The answer to a request of the proxy's own (a retry): its owner
		// gets the error instead, or it would wait for ever.
		delete(r.table.proxy, key)
		resp := ParseMsg(r.oversizeError(preq.ID, -32603, "the agent's response", l.Oversize))
		r.hooks.ProxyResponse(r, &resp, preq)
		return
	}
	req := r.table.client[key]
	if req == nil || req.answered {
		return
	}
	req.answered = true // the discarded line was the agent's answer
	r.Reply(req, r.oversizeError(req.ID, -32603, "the agent's response", l.Oversize))
}

// isCall reports whether a discarded line was a request or notification
// (its head names a method): then it answers nothing.
func isCall(l Line) bool {
	call := false
	_ = jsonscan.Members(trimEOL(l.Head), func(key, _ []byte) bool {
		call = string(key) == "method"
		return !call
	})
	return call
}

func (r *Relay) clientOversize(l Line) {
	r.Counts.OversizeFromClient++
	id := oversizeID(l)
	r.log.Error("client line exceeds the line cap; discarded", "dir", "c2a", "bytes", l.Oversize, "max", r.cfg.MaxLine, "id", string(id))
	if id == nil {
		return
	}
	r.emit(A2C, r.oversizeError(id, -32600, "request", l.Oversize))
}

// oversizeError is the error response naming a discarded line.
func (r *Relay) oversizeError(id []byte, code int, what string, size int64) []byte {
	msg := "acp-guard: " + what + " (" + strconv.FormatInt(size, 10) + " bytes) exceeds the line cap (--max-line " +
		strconv.FormatInt(r.cfg.MaxLine, 10) + ") and was discarded"
	data := map[string]any{"acpGuard": map[string]any{"reason": "line_too_long", "bytes": size, "maxLine": r.cfg.MaxLine}}
	return ErrorResponse(id, code, msg, data)
}

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
// transcript can replay the stop at the same point.
type StopTap interface {
	Stopping()
}

// StopHook is an optional extension of Hooks: Stopping runs once, under
// the relay's lock like every hook, when acp-guard starts shutting down on
// a signal. Ctl.Call refuses requests from then on.
type StopHook interface {
	Stopping(c Ctl)
}

// AgentOutputClosed answers every pending client request exactly once
// because the agent closed its stdout while still running: nothing can
// answer them any more. Hooks see it as the agent's exit
// (st.OutputClosed); later requests are answered at once.
func (r *Relay) AgentOutputClosed() {
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

// NopHooks is a plain relay: everything is forwarded.
type NopHooks struct{}

func (NopHooks) ClientMsg(Ctl, *Msg, *Request) Verdict { return Forward }
func (NopHooks) AgentMsg(Ctl, *Msg, *Request) Verdict  { return Forward }
func (NopHooks) ProxyResponse(Ctl, *Msg, *Request)     {}
func (NopHooks) Stderr(Ctl, string)                    {}
func (NopHooks) AgentExit(Ctl, ExitStatus)             {}
func (NopHooks) ExitData(Ctl, *Request, ExitStatus, map[string]any) map[string]any {
	return nil
}
func (NopHooks) ClientClosed(Ctl)       {}
func (NopHooks) KeepParams(string) bool { return false }
