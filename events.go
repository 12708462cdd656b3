package acpguard

import "github.com/acp-guard/acp-guard/event"

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
type Event = event.Event

// The events and the values they carry (package event documents every
// field).
type (
	EventBase         = event.EventBase
	TraceContext      = event.TraceContext
	TurnStarted       = event.TurnStarted       // a client session/prompt arrived
	FrameObserved     = event.FrameObserved     // a frame went through (Config.EventFrames only)
	FailureClassified = event.FailureClassified // a failure was classified, and what recovery decided
	Transition        = event.Transition        // a prompt moved along the recovery state machine
	AttemptSent       = event.AttemptSent       // acp-guard sent a retry, a model switch, a compaction
	AttemptDone       = event.AttemptDone       // the agent answered it (or it was never sent)
	NoticeSent        = event.NoticeSent        // the client was told what happens next
	Answered          = event.Answered          // a client prompt got its one answer (its TurnReport)
	SilentFlagged     = event.SilentFlagged     // a success was flagged as a silent failure
	AbnormalStop      = event.AbnormalStop      // a success ended with refusal, max_tokens, max_turn_requests
	CircuitDecision   = event.CircuitDecision   // a shared circuit decided about a held prompt
	CircuitChanged    = event.CircuitChanged    // a failure or a probe's progress was reported to a circuit
	Stalled           = event.Stalled           // the stall watchdog cancelled a silent turn
	AgentIdentified   = event.AgentIdentified   // initialize named the agent
	AgentExited       = event.AgentExited       // the agent exited (or closed its stdout)
	LateOutput        = event.LateOutput        // text for a session after its prompt was answered
	RecoveryAction    = event.RecoveryAction    // an action on a held prompt, taken or refused

	Verdict         = event.Verdict         // how a failure was classified (FailureClassified)
	EvidenceFlags   = event.EvidenceFlags   // a turn's evidence as the client sees it
	Silent          = event.Silent          // a silent-failure flag (SilentFlagged)
	SilentEvidence  = event.SilentEvidence  // the evidence of each kind that applied
	StopNote        = event.StopNote        // an abnormal stop's note (AbnormalStop)
	CircuitSnapshot = event.CircuitSnapshot // a circuit's key, state and cooldown
	FailedAttempt   = event.FailedAttempt   // one failed attempt of a fallback chain (ProviderError.Attempts)
	Recovery        = event.Recovery        // what acp-guard did about a failure (ProviderError.Recovery)
)
