package acpguard

import "github.com/acp-guard/acp-guard/event"

// Outcome is how a client prompt turn ended (TurnReport.Outcome).
type Outcome = event.Outcome

// Outcomes of a prompt turn (the "outcome" of a `replay --json` line).
const (
	OutcomePassed    = event.OutcomePassed    // the agent's answer went to the client as it came (a success, a cancelled turn, an error nothing recovers)
	OutcomeRewritten = event.OutcomeRewritten // a failure the agent reported as text was answered with a ProviderError error
	OutcomeAnnotated = event.OutcomeAnnotated // the agent's error answer went on with its ProviderError added
	OutcomeRetried   = event.OutcomeRetried   // a retry (or a model switch, a compaction) acp-guard sent gave the answer
	OutcomeFailed    = event.OutcomeFailed    // the turn ended without an answer of the agent's (the agent exited, the session ended)
)

// The turn report and its parts (package event documents their fields).
type (
	// TurnReport is the guard's account of one client session/prompt: its
	// outcome, the ProviderError it was answered with, the last recovery
	// decision. It is what `acp-guard replay --json` prints, one a line.
	TurnReport = event.TurnReport
	// Decision is a recovery decision: what acp-guard did about a failure
	// (Action: retry, wait, skip, stop or compact), when (Delay,
	// Deadline), which attempt of how many, for which class, and why
	// (Reason, a short machine word).
	Decision = event.Decision
	// RPCError is a JSON-RPC error's code and message.
	RPCError = event.RPCError
)
