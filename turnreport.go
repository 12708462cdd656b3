package acpguard

import (
	"encoding/json"
	"time"

	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/policy"
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
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Decision is a recovery decision: what acp-guard did about a failure
// (Action: retry, wait, skip, stop or compact), when (Delay, Deadline),
// which attempt of how many, for which class, and why (Reason, a short
// machine word).
type Decision struct {
	Action     string        `json:"action"`
	Delay      time.Duration `json:"-"`
	DelayMs    int64         `json:"delayMs"`
	Deadline   time.Time     `json:"deadline,omitzero"`
	Attempt    int           `json:"attempt"`
	MaxRetries int           `json:"maxRetries"`
	Class      string        `json:"class"`
	Reason     string        `json:"reason"`
}

// TurnReport is the guard's account of one client session/prompt: its
// outcome, the ProviderError it was answered with, the last recovery
// decision. It is what `acp-guard replay --json` prints, one a line.
type TurnReport struct {
	SessionID     string          `json:"sessionId"`
	RequestID     json.RawMessage `json:"requestId"`
	Generation    int64           `json:"generation"`
	Outcome       Outcome         `json:"outcome"`
	StopReason    string          `json:"stopReason,omitempty"`
	Error         *RPCError       `json:"error,omitempty"`
	ProviderError *ProviderError  `json:"providerError,omitempty"`
	Decision      *Decision       `json:"decision,omitempty"`
	Attempts      int             `json:"attempts,omitempty"` // ≥ 2 when acp-guard sent an attempt of its own
	Model         string          `json:"model,omitempty"`    // the fallback model switched to, if any
	Suppressed    int             `json:"suppressed"`         // control chunks kept from the client
	Silent        string          `json:"silent,omitempty"`   // the kind a success was flagged with
	// AgentRetries counts the agent's own visible retries over the
	// prompt's attempts: its retry notes, re-streamed answers, the retries
	// it stated in its error.
	AgentRetries int `json:"agentRetries,omitempty"`
	// LateOutput counts the text chunks for the session that arrived after
	// this answer and before the session's next prompt (a replay puts
	// them here; a live session reports them through Config.OnLate).
	LateOutput int `json:"lateOutput,omitempty"`
	// At is when the turn settled: the stamp of the event that answered
	// it. Not part of the report line.
	At time.Time `json:"-"`
}

// turnReport is the guard's report as the library's: the one place the
// two meet (TestTurnReportConverts keeps them field for field).
func turnReport(r guard.TurnReport) TurnReport {
	out := TurnReport{
		SessionID: r.SessionID, RequestID: r.RequestID, Generation: r.Generation, Outcome: Outcome(r.Outcome),
		StopReason: r.StopReason, ProviderError: r.ProviderError, Attempts: r.Attempts, Model: r.Model,
		Suppressed: r.Suppressed, Silent: r.Silent, AgentRetries: r.AgentRetries, LateOutput: r.LateOutput, At: r.At,
	}
	if r.Error != nil {
		out.Error = &RPCError{Code: r.Error.Code, Message: r.Error.Message}
	}
	if r.Decision != nil {
		d := decision(*r.Decision)
		out.Decision = &d
	}
	return out
}

func decision(d policy.Decision) Decision {
	return Decision{Action: string(d.Action), Delay: d.Delay, DelayMs: d.DelayMs, Deadline: d.Deadline,
		Attempt: d.Attempt, MaxRetries: d.MaxRetries, Class: d.Class, Reason: d.Reason}
}
