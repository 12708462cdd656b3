package guard

import (
	evt "github.com/acp-guard/acp-guard/event"
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

// The event types are package event's (their fields are documented
// there); the guard names them here so that its code reads as before.
type (
	Event             = evt.Event
	EventBase         = evt.EventBase
	TraceContext      = evt.TraceContext
	TurnStarted       = evt.TurnStarted
	FrameObserved     = evt.FrameObserved
	FailureClassified = evt.FailureClassified
	Transition        = evt.Transition
	RecoveryAction    = evt.RecoveryAction
	AttemptSent       = evt.AttemptSent
	AttemptDone       = evt.AttemptDone
	NoticeSent        = evt.NoticeSent
	Answered          = evt.Answered
	SilentFlagged     = evt.SilentFlagged
	AbnormalStop      = evt.AbnormalStop
	CircuitDecision   = evt.CircuitDecision
	CircuitChanged    = evt.CircuitChanged
	Stalled           = evt.Stalled
	AgentIdentified   = evt.AgentIdentified
	AgentExited       = evt.AgentExited
	LateOutput        = evt.LateOutput
)

// Kinds of AttemptSent and AttemptDone.
const (
	AttemptRetry      = evt.AttemptRetry
	AttemptSwitch     = evt.AttemptSwitch
	AttemptCompaction = evt.AttemptCompaction
)

// Circuit decisions (CircuitDecision.Decision).
const (
	CircuitGo        = evt.CircuitGo
	CircuitProbe     = evt.CircuitProbe
	CircuitPark      = evt.CircuitPark
	CircuitOpen      = evt.CircuitOpen
	CircuitSkipModel = evt.CircuitSkipModel
)

// Turns returns a subscriber that passes each Answered event's report to
// fn: what `replay --json` prints.
func Turns(fn func(TurnReport)) func(Event) {
	return func(e Event) {
		if a, ok := e.(Answered); ok {
			fn(a.Report)
		}
	}
}
