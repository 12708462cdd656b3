package transport

import (
	"log/slog"
	"time"
)

// What plugs into a Relay: the hooks that observe and decide, the Ctl they
// act through, the Output the relay writes to and the Tap that records.

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
// per stream, from whichever goroutine read the event (see the package
// documentation) — and must not block: no I/O, no waiting.
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

// StampTap is an optional extension of Tap: Stamp is told the time of each
// event before the event is handled — the stamp every Ctl.Now of that event
// returns — so what the tap writes for the event carries the time the
// event's decisions used, not a later reading of its own (a transcript
// whose failure is stamped after the retry was scheduled from it replays
// the retry late). A tap used outside an event loop hears no stamps.
type StampTap interface {
	Stamp(at time.Time)
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

// agentOutputClosed answers every pending client request exactly once
// because the agent closed its stdout while still running: nothing can
// answer them any more. Hooks see it as the agent's exit

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
