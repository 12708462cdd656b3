package acpguard

import "github.com/acp-guard/acp-guard/guard"

// Event is one thing that happened in a guarded session, as the guard saw
// or decided it (Config.OnEvent). The concrete types are the values
// below; a subscriber switches on the type and ignores the types it does
// not know:
//
//	cfg.OnEvent = func(e acpguard.Event) {
//		switch e := e.(type) {
//		case acpguard.FailureClassified:
//			queue <- e // hand it to a goroutine of your own: never block here
//		case acpguard.Answered:
//			…
//		}
//	}
//
// Every event carries EventBase: the event loop's time stamp (one per
// event: a wait's deadline is its decision's At plus the delay), the
// agent, and the session and client request it is about. What the guard
// parsed travels with the event — a verdict, the agent's error as decoded
// once, the decision — so nothing needs to parse a frame again. Slices
// are valid during the call unless their field says they may be kept.
type Event = guard.Event

// The events (see each type in package guard for its fields).
type (
	EventBase         = guard.EventBase
	TraceContext      = guard.TraceContext
	TurnStarted       = guard.TurnStarted       // a client session/prompt arrived
	FrameObserved     = guard.FrameObserved     // a frame went through (Config.EventFrames only)
	FailureClassified = guard.FailureClassified // a failure was classified, and what recovery decided
	Transition        = guard.Transition        // a prompt moved along the recovery state machine
	AttemptSent       = guard.AttemptSent       // acp-guard sent a retry, a model switch, a compaction
	AttemptDone       = guard.AttemptDone       // the agent answered it (or it was never sent)
	NoticeSent        = guard.NoticeSent        // the client was told what happens next
	Answered          = guard.Answered          // a client prompt got its one answer (its TurnReport)
	SilentFlagged     = guard.SilentFlagged     // a success was flagged as a silent failure
	AbnormalStop      = guard.AbnormalStop      // a success ended with refusal, max_tokens, max_turn_requests
	CircuitDecision   = guard.CircuitDecision   // a shared circuit decided about a held prompt
	CircuitChanged    = guard.CircuitChanged    // a failure or a probe's progress was reported to a circuit
	Stalled           = guard.Stalled           // the stall watchdog cancelled a silent turn
	AgentIdentified   = guard.AgentIdentified   // initialize named the agent
	AgentExited       = guard.AgentExited       // the agent exited (or closed its stdout)
	LateOutput        = guard.LateOutput        // text for a session after its prompt was answered
	RecoveryAction    = guard.RecoveryAction    // an action on a held prompt, taken or refused
)
