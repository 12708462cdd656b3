package guard

import (
	"encoding/json"
	"time"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// The event stream. Everything the guard sees and decides is emitted, as
// it happens, as one typed event to Config.Events: telemetry, the decision
// log (eventlog.go), `replay --json` and a library's subscriber all read
// this one stream instead of wrapping the guard or re-reading its frames.
// Each event carries what the guard already parsed — the verdict, the
// agent's error as decoded once, the decision — so a subscriber never
// parses a frame.
//
// Events are delivered on the relay's event loop, in the order things
// happened, under its lock: a subscriber must not block, do I/O or call
// back into the session; one that needs to do work queues it (package
// telemetry does). Slices in an event alias the guard's memory and are
// valid only during the call unless documented otherwise; copy what you
// keep. New event types and fields may be added: ignore what you do not
// know.

// Event is one thing that happened in a guarded session. The concrete
// types are the values below; switch on the type.
type Event interface {
	// Base returns the fields every event has.
	Base() EventBase
}

// EventBase is what every event carries.
type EventBase struct {
	// At is the event loop's stamp of the event that caused this one
	// (transport.Ctl.Now): one time per event, shared by everything
	// decided for it — a wait's deadline is At plus its delay.
	At time.Time
	// Agent is the adapter identity in effect: --adapter, else
	// initialize's agentInfo.name, else the command's basename.
	Agent string
	// SessionID is the ACP session the event is about ("" if none or not
	// known without parsing).
	SessionID string
	// RequestID is the raw JSON id of the client's request the event is
	// about (the session/prompt of a turn); nil if none. Never modified:
	// it may be kept.
	RequestID json.RawMessage
}

// Base returns b.
func (b EventBase) Base() EventBase { return b }

// TraceContext is the W3C trace context a client sent in a
// session/prompt's params._meta (the keys MCP standardised for _meta).
type TraceContext struct {
	Traceparent string
	Tracestate  string
	Baggage     string
}

// TurnStarted: a client session/prompt arrived.
type TurnStarted struct {
	EventBase
	Generation int64  // the session's prompt generation
	Model      string // the session's current model, if the agent said
	// Trace is the prompt's trace context, read only when
	// Config.TraceContext is set.
	Trace TraceContext
}

// FrameObserved: a frame from the client or the agent went through the
// guard (only with Config.Frames: one per frame). It says where the frame
// went, never what it holds.
type FrameObserved struct {
	EventBase
	Dir    string          // "c2a" or "a2c"
	Kind   string          // request, notification, response, invalid, other
	Method string          // requests and notifications
	ID     json.RawMessage // the frame's raw id (requests, responses); valid during the call
	Bytes  int             // the frame's length, terminator included (an oversized, discarded line: 0)
	// Update is a session/update's kind as the observers read it:
	// agent_message_chunk, agent_thought_chunk, tool_call,
	// tool_call_update, plan, or other.
	Update string
	// Route is what happened to the frame: forward, drop (a suppressed
	// control chunk, an answer already given) or hold (a failed answer
	// kept for recovery).
	Route string
	// Proxy marks the agent's answer to a request of acp-guard's own (a
	// retry, a model switch); RequestID is then the client prompt it
	// serves.
	Proxy bool
}

// FailureClassified: a failure was classified — a prompt attempt's (the
// agent's error, a projected failure, a stall, the agent's exit) or a
// session set-up's — and, for a prompt, what the policy decided about it.
type FailureClassified struct {
	EventBase
	Phase   string // prompt, session_setup or launch
	Attempt int    // 0: the client's own attempt; 1..: acp-guard's retries
	Model   string // the model the attempt ran on, if known
	Verdict classify.Verdict
	Source  string // the evidence source (rpc_error, message_chunk, exit, …)
	// ReplaySafe and Evidence are the turn's safety-gate evidence.
	ReplaySafe bool
	Evidence   EvidenceFlags
	// Error is the agent's JSON-RPC error as the guard decoded it, once;
	// nil for a failure the agent did not report as an error.
	Error *RPCError
	// Decision is what recovery does about it (prompt phase only).
	Decision policy.Decision
}

// Transition: a prompt moved along a row of the recovery state machine
// (the table in the package documentation).
type Transition struct {
	EventBase
	From, On, To string
	Attempt      int
	Decision     policy.Decision
	// Recorded is the attempt-log outcome the row writes ("" : none).
	Recorded policy.AttemptOutcome
	// By is who asked for it: "client" or "operator" for an action on a
	// held prompt (RecoveryAction), "" for the guard's own decision.
	By string
}

// RecoveryAction: an action on a held prompt — retry_now, skip or stop —
// was asked for by the client (_acp-guard/recovery) or an operator
// (acp-guard held), and taken (From, To) or refused by the gate
// (Refused says why).
type RecoveryAction struct {
	EventBase
	Action   string
	By       string
	From, To string
	Refused  string
}

// Kinds of AttemptSent and AttemptDone.
const (
	AttemptRetry      = "retry"      // the cached prompt, sent again
	AttemptSwitch     = "switch"     // session/set_model or set_config_option
	AttemptCompaction = "compaction" // the agent's compaction command
)

// AttemptSent: acp-guard sent a request of its own for a held prompt.
type AttemptSent struct {
	EventBase
	Kind    string // AttemptRetry, AttemptSwitch or AttemptCompaction
	Method  string
	Attempt int    // the prompt's attempt the request belongs to
	Model   string // the model the retry runs on, or switched to
}

// AttemptDone: the agent answered a request of acp-guard's own (or the
// relay refused to send it: NotSent).
type AttemptDone struct {
	EventBase
	Kind       string
	Method     string
	Attempt    int
	Model      string
	OK         bool
	StopReason string    // a retry's or compaction's result
	Error      *RPCError // the error answer, decoded once
	NotSent    string    // the relay's reason when the request never reached the agent
}

// NoticeSent: the client was told what happens next (a retry notice).
type NoticeSent struct {
	EventBase
	Action     string // retry, wait_for_reset or switch
	Text       string // what a person reads
	Delay      time.Duration
	Deadline   time.Time // zero for a switch
	Attempt    int
	MaxRetries int
	Code       string
	Class      string
	Model      string // the model switched to (switch)
}

// Answered: a client's session/prompt got its one answer.
type Answered struct {
	EventBase
	Report TurnReport
	// Duration is from the client's request to the answer.
	Duration time.Duration
}

// SilentFlagged: a successful result was flagged as a silent failure
// (result._meta.acpGuard.silent).
type SilentFlagged struct {
	EventBase
	Silent Silent
}

// AbnormalStop: a result's stop reason ended the turn short of an answer
// (result._meta.acpGuard.stop).
type AbnormalStop struct {
	EventBase
	StopReason string
	Note       StopNote
}

// Circuit decisions (CircuitDecision.Decision).
const (
	CircuitGo        = "go"         // dispatch
	CircuitProbe     = "probe"      // dispatch as the circuit's one probe
	CircuitPark      = "park"       // hold on; ask again at Until
	CircuitOpen      = "open"       // the cooldown ends beyond the prompt's schedule: stop
	CircuitSkipModel = "skip_model" // a fallback model skipped: its circuit cools down
)

// CircuitDecision: a shared circuit decided about a held prompt.
type CircuitDecision struct {
	EventBase
	Decision string
	Key      string
	Model    string
	Until    time.Time // park: when to ask again; skip_model: the cooldown's end
	Circuit  circuit.Snapshot
}

// CircuitChanged: acp-guard reported to a circuit — a failure (Op "fail")
// or a probe's progress (Op "progress") — and the circuit is now as
// Circuit says.
type CircuitChanged struct {
	EventBase
	Op      string
	Circuit circuit.Snapshot
}

// Stalled: the stall watchdog saw nothing from the agent for the timeout
// and sent session/cancel.
type Stalled struct {
	EventBase
	Idle      time.Duration
	LastFrame string
}

// AgentIdentified: the adapter identity changed (initialize's
// agentInfo.name).
type AgentIdentified struct {
	EventBase
	Source  string // flag, initialize or command
	Name    string // agentInfo.name
	Version string // agentInfo.version
}

// AgentExited: the agent exited, or closed its stdout while running.
type AgentExited struct {
	EventBase
	Status transport.ExitStatus
}

// Turns returns a subscriber that passes each Answered event's report to
// fn: what `replay --json` prints.
func Turns(fn func(TurnReport)) func(Event) {
	return func(e Event) {
		if a, ok := e.(Answered); ok {
			fn(a.Report)
		}
	}
}
