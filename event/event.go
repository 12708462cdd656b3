package event

import (
	"encoding/json"
	"time"
)

// Event is one thing that happened in a guarded session. The concrete
// types are the values below; switch on the type.
type Event interface {
	// Base returns the fields every event has.
	Base() EventBase
}

// EventBase is what every event carries.
type EventBase struct {
	// At is the event loop's stamp of the event that caused this one
	// (a replay's is its virtual clock): one time per event, shared by
	// everything decided for it — a wait's deadline is At plus its delay.
	At time.Time
	// Agent is the adapter identity in effect: the configured adapter,
	// else initialize's agentInfo.name, else the command's basename.
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
	Traceparent string // the traceparent key, as sent ("" when absent)
	Tracestate  string // the tracestate key, as sent
	Baggage     string // the baggage key, as sent
}

// TurnStarted: a client session/prompt arrived.
type TurnStarted struct {
	EventBase
	Generation int64  // the session's prompt generation
	Model      string // the session's current model, if the agent said
	// Trace is the prompt's trace context, read only when the session
	// exports telemetry.
	Trace TraceContext
}

// FrameObserved: a frame from the client or the agent went through the
// guard (only when frames are asked for, acpguard.Config.EventFrames: one
// per frame). It says where the frame went, never what it holds.
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
	Phase   string  // prompt, session_setup or launch
	Attempt int     // 0: the client's own attempt; 1..: acp-guard's retries
	Model   string  // the model the attempt ran on, if known
	Verdict Verdict // what the failure was classified as
	Source  string  // the evidence source (rpc_error, message_chunk, exit, …)
	// ReplaySafe and Evidence are the turn's safety-gate evidence.
	ReplaySafe bool
	Evidence   EvidenceFlags
	// Error is the agent's JSON-RPC error as the guard decoded it, once;
	// nil for a failure the agent did not report as an error.
	Error *RPCError
	// Decision is what recovery does about it (prompt phase only).
	Decision Decision
}

// Transition: a prompt moved along a row of the recovery state machine
// (the recovery table in package guard's documentation, which may gain
// rows).
type Transition struct {
	EventBase
	// From and To are the states the prompt left and entered, On the
	// event that moved it (the names of the recovery table).
	From, On, To string
	// Attempt is the prompt's attempt when it moved (0: the client's own).
	Attempt int
	// Decision is the recovery decision the row carries out (zero when
	// the row decides nothing).
	Decision Decision
	// Recorded is the attempt-log outcome the row writes ("" : none).
	Recorded string
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
	Action string // retry_now, skip or stop
	By     string // client or operator
	// From and To are the prompt's states before and after (the same
	// state when the action was refused).
	From, To string
	// Refused is why the gate refused the action; "" when it was taken.
	Refused string
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
	Method  string // the request's ACP method (session/prompt, session/set_model, …)
	Attempt int    // the prompt's attempt the request belongs to
	Model   string // the model the retry runs on, or switched to
}

// AttemptDone: the agent answered a request of acp-guard's own (or the
// relay refused to send it: NotSent).
type AttemptDone struct {
	EventBase
	Kind       string    // as the AttemptSent's
	Method     string    // as the AttemptSent's
	Attempt    int       // as the AttemptSent's
	Model      string    // as the AttemptSent's
	OK         bool      // the agent answered with a result, not an error
	StopReason string    // a retry's or compaction's result
	Error      *RPCError // the error answer, decoded once
	NotSent    string    // the relay's reason when the request never reached the agent
}

// NoticeSent: the client was told what happens next (a retry notice).
type NoticeSent struct {
	EventBase
	Action     string        // retry, wait_for_reset or switch
	Text       string        // what a person reads
	Delay      time.Duration // how long until the next attempt (a retry, a wait)
	Deadline   time.Time     // when the next attempt is due; zero for a switch
	Attempt    int           // the attempt that comes next
	MaxRetries int           // the class's retry budget
	Code       string        // the failure's semantic code (Verdict.Code)
	Class      string        // the failure's class (Verdict.Class)
	Model      string        // the model switched to (switch)
}

// Answered: a client's session/prompt got its one answer.
type Answered struct {
	EventBase
	// Report is how the turn ended: what `replay --json` prints.
	Report TurnReport
	// Duration is from the client's request to the answer.
	Duration time.Duration
}

// SilentFlagged: a successful result was flagged as a silent failure
// (result._meta.acpGuard.silent).
type SilentFlagged struct {
	EventBase
	Silent Silent // the flag, as the client's result carries it
}

// AbnormalStop: a result's stop reason ended the turn short of an answer
// (result._meta.acpGuard.stop).
type AbnormalStop struct {
	EventBase
	StopReason string   // the agent's stop reason (refusal, max_tokens, max_turn_requests)
	Note       StopNote // the note, as the client's result carries it
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
	Decision string          // one of the Circuit constants above
	Key      string          // the circuit's key (namespace, provider, scope)
	Model    string          // the model the prompt would run on
	Until    time.Time       // park: when to ask again; skip_model: the cooldown's end
	Circuit  CircuitSnapshot // the circuit as it decided
}

// CircuitChanged: acp-guard reported to a circuit — a failure (Op "fail")
// or a probe's progress (Op "progress") — and the circuit is now as
// Circuit says.
type CircuitChanged struct {
	EventBase
	Op      string          // fail or progress
	Circuit CircuitSnapshot // the circuit after the report
}

// Stalled: the stall watchdog saw nothing from the agent for the timeout
// and sent session/cancel.
type Stalled struct {
	EventBase
	Idle      time.Duration // how long the agent sent nothing for the turn
	LastFrame string        // what the agent sent last ("nothing" when nothing came in the turn)
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
	Status ExitStatus // how it ended
}

// LateOutput: text for a session arrived after its prompt was answered
// and before the session's next prompt. It is reported when that window
// closes: At is the stamp of the event that closed it; RequestID is the
// answered prompt's.
type LateOutput struct {
	EventBase
	Generation int64 // the answered prompt's first generation (as in its TurnReport)
	Chunks     int   // non-blank message and thought chunks
}
