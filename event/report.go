package event

import (
	"encoding/json"
	"time"
)

// Outcome is how a client prompt turn ended (TurnReport.Outcome).
type Outcome string

// Outcomes of a prompt turn (the "outcome" of a `replay --json` line).
const (
	OutcomePassed    Outcome = "passed"    // the agent's answer went to the client as it came (a success, a cancelled turn, an error nothing recovers)
	OutcomeRewritten Outcome = "rewritten" // a failure the agent reported as text was answered with a ProviderError error
	OutcomeAnnotated Outcome = "annotated" // the agent's error answer went on with its ProviderError added
	OutcomeRetried   Outcome = "retried"   // a retry (or a model switch, a compaction) acp-guard sent gave the answer
	OutcomeFailed    Outcome = "failed"    // the turn ended without an answer of the agent's (the agent exited, the session ended)
)

// RPCError is a JSON-RPC error's code and message.
type RPCError struct {
	Code    int    `json:"code"`    // the error's code
	Message string `json:"message"` // the error's message, as the agent sent it
}

// Decision is a recovery decision: what acp-guard did about a failure,
// when, which attempt of how many, for which class, and why.
type Decision struct {
	// Action is retry, wait, skip, stop or compact (none: nothing to
	// decide, as for a flagged success).
	Action string `json:"action"`
	// Delay is how long until the attempt the decision schedules; DelayMs
	// is the same in whole milliseconds, as the report line carries it.
	Delay   time.Duration `json:"-"`
	DelayMs int64         `json:"delayMs"`
	// Deadline is when a wait ends (zero for anything but a wait).
	Deadline time.Time `json:"deadline,omitzero"`
	// Attempt is the 1-based ordinal of the retry scheduled (0 for stop
	// and skip); MaxRetries is the class's budget.
	Attempt    int `json:"attempt"`
	MaxRetries int `json:"maxRetries"`
	// Class is the failure's class (transient, hard, request,
	// unclassified).
	Class string `json:"class"`
	// Reason is a short machine word: unsafe, stale, unclassified,
	// request_class, reset_wait, retry, exhausted, ….
	Reason string `json:"reason"`
}

// Verdict is how a failure was classified: the catalogue rule that
// matched and what it says.
type Verdict struct {
	Code             string `json:"code"`             // the semantic code (rate_limited, auth_required, …)
	Class            string `json:"class"`            // transient, hard, request or unclassified
	Confidence       string `json:"confidence"`       // high, medium or low
	Scope            string `json:"scope"`            // provider, account, model, request, agent or unknown
	Rule             string `json:"rule"`             // the stable rule ID; "" when no rule matched
	CatalogueVersion string `json:"catalogueVersion"` // the catalogue the rule is from
	// RetryAfter is the provider's validated, positive delay hint (nil:
	// none).
	RetryAfter *time.Duration `json:"-"`
	// ResetAt is the provider's validated reset instant, in UTC (nil:
	// none).
	ResetAt *time.Time `json:"-"`
	// SafeExcerpt is the provider's text, bounded and redacted, as the
	// client's ProviderError carries it.
	SafeExcerpt string `json:"safeExcerpt"`
	// Reason is why a failure is unclassified: no_match, stale, conflict
	// or client_closed.
	Reason string `json:"reason,omitempty"`
	// Conflicts are the rule IDs that disagreed (Reason conflict).
	Conflicts []string `json:"conflicts,omitempty"`
}

// TurnReport is the guard's account of one client session/prompt: its
// outcome, the ProviderError it was answered with, the last recovery
// decision. It is what `acp-guard replay --json` prints, one a line.
type TurnReport struct {
	SessionID     string          `json:"sessionId"`               // the ACP session
	RequestID     json.RawMessage `json:"requestId"`               // the client's request id, raw
	Generation    int64           `json:"generation"`              // the session's prompt generation
	Outcome       Outcome         `json:"outcome"`                 // how the turn ended
	StopReason    string          `json:"stopReason,omitempty"`    // the answer's stop reason, for a result
	Error         *RPCError       `json:"error,omitempty"`         // the agent's error, for an error answer
	ProviderError *ProviderError  `json:"providerError,omitempty"` // what the client was answered with, for a failure
	Decision      *Decision       `json:"decision,omitempty"`      // the last recovery decision, if any
	Attempts      int             `json:"attempts,omitempty"`      // ≥ 2 when acp-guard sent an attempt of its own
	Model         string          `json:"model,omitempty"`         // the fallback model switched to, if any
	Suppressed    int             `json:"suppressed"`              // control chunks kept from the client
	Silent        string          `json:"silent,omitempty"`        // the kind a success was flagged with (SilentTruncated, SilentRepeated, SilentEmpty)
	// AgentRetries counts the agent's own visible retries over the
	// prompt's attempts: its retry notes, re-streamed answers, the retries
	// it stated in its error.
	AgentRetries int `json:"agentRetries,omitempty"`
	// LateOutput counts the text chunks for the session that arrived after
	// this answer and before the session's next prompt. A replay puts
	// them here; a live session reports them later, as a LateOutput event
	// (acpguard.Config.OnLate).
	LateOutput int `json:"lateOutput,omitempty"`
	// At is when the turn settled: the stamp of the event that answered
	// it. Not part of the report line.
	At time.Time `json:"-"`
}
