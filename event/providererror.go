package event

import "time"

// Schema names the ProviderError format.
const Schema = "acp-guard.provider-error/1"

// ProviderError is the structured failure added to a JSON-RPC error's data
// under "providerError": the wire contract. Field order is the wire order;
// fields are only ever added, and optional ones are omitted when empty.
type ProviderError struct {
	Schema           string  `json:"schema"`           // Schema
	Code             string  `json:"code"`             // the semantic code (rate_limited, auth_required, …)
	Class            string  `json:"class"`            // transient, hard, request or unclassified
	Confidence       string  `json:"confidence"`       // of the catalogue rule that decided: high, medium, low
	Scope            string  `json:"scope"`            // of that rule: provider, account, model, request, agent, unknown
	Rule             string  `json:"rule"`             // that rule's stable ID; "" when no rule decided
	CatalogueVersion string  `json:"catalogueVersion"` // the catalogue's version (with an overlay: embedded+overlay)
	Source           string  `json:"source"`           // where the evidence came from: the adapter (codex_acp, …) or the evidence source
	ProviderID       string  `json:"providerId"`       // the adapter
	SessionID        string  `json:"sessionId"`        // the failed attempt's ACP session
	Generation       int64   `json:"generation"`       // its prompt generation
	Phase            string  `json:"phase"`            // prompt, session_setup or launch
	OccurredAt       string  `json:"occurredAt"`       // when it failed, UTC, RFC 3339 with milliseconds
	RetryAfterMs     *int64  `json:"retryAfterMs"`     // the provider's validated delay hint, null when none
	ResetAt          *string `json:"resetAt"`          // the provider's validated reset instant (RFC 3339, UTC), null when none
	// ReplaySafe is the safety gate's answer: the turn produced no output
	// and no effect, so it may be sent again; Evidence is what it saw.
	ReplaySafe bool          `json:"replaySafe"`
	Evidence   EvidenceFlags `json:"evidence"`
	// SafeExcerpt is at most 256 bytes of the evidence, redacted.
	SafeExcerpt string   `json:"safeExcerpt"`
	Reason      string   `json:"reason,omitempty"`    // why unclassified: no_match, conflict, stale, client_closed
	Conflicts   []string `json:"conflicts,omitempty"` // rule ids of a conflict
	// Model is the model the failed attempt ran on, when the agent told
	// (session/new|load results, session/set_model, the model config
	// option) or a fallback switched to it.
	Model string `json:"model,omitempty"`
	// AgentRetries counts the agent's own visible retries in the failed
	// attempt (its retry notes, re-streamed answers, the retries it stated
	// in its error) before it gave up.
	AgentRetries int `json:"agentRetries,omitempty"`
	// Recovery is what acp-guard did about the failure.
	Recovery Recovery `json:"recovery"`
	// After a fallback chain (each fallback model tried with circuits): every failed attempt,
	// the earliest cooldown end among them, and whether something other
	// than exhaustion ended the chain.
	Attempts       []FailedAttempt `json:"attempts,omitempty"`
	SoonestRetryAt *string         `json:"soonestRetryAt,omitempty"`
	Aborted        bool            `json:"aborted,omitempty"`
	// Circuit is the circuit that decided (recovery.reason circuit_open).
	Circuit *CircuitSnapshot `json:"circuit,omitempty"`
}

// EvidenceFlags are the turn's evidence as the client sees it.
type EvidenceFlags struct {
	AssistantOutput bool `json:"assistantOutput"`         // the client saw assistant text
	Thoughts        bool `json:"thoughts"`                // the client saw thought text
	ToolActivity    bool `json:"toolActivity"`            // the client saw a tool call or update
	Effects         bool `json:"effects,omitempty"`       // the agent sent the client a request with an effect (a write, a terminal)
	Cancelled       bool `json:"cancelled,omitempty"`     // the client cancelled the turn
	AgentExited     bool `json:"agentExited,omitempty"`   // the agent exited during the turn
	AgentRequests   bool `json:"agentRequests,omitempty"` // an agent→client request while the turn was held
	Unparseable     bool `json:"unparseable,omitempty"`   // an unparseable stdout line
	// Set by the stall watchdog: how long the agent sent nothing, and
	// what it sent last ("nothing" when nothing came in the turn).
	StalledMs int64  `json:"stalledMs,omitempty"`
	LastFrame string `json:"lastFrame,omitempty"`
}

// Recovery says what acp-guard did about the failure.
type Recovery struct {
	Action     string `json:"action"`           // stop (the final answer), or retry/wait/skip in the attempt log
	Attempt    int    `json:"attempt"`          // the attempts acp-guard made of its own
	MaxRetries int    `json:"maxRetries"`       // the class's retry budget
	Reason     string `json:"reason,omitempty"` // why (docs/WIRE.md lists the values)
	// By is who stopped the prompt with an action (reason stop_now):
	// "client" or "operator".
	By string `json:"by,omitempty"`
}

// FailedAttempt is one failed attempt of a prompt, as the fallback summary
// (ProviderError.attempts) lists it.
type FailedAttempt struct {
	Model         string  `json:"model"`         // the model it ran on
	Code          string  `json:"code"`          // its failure's semantic code
	Class         string  `json:"class"`         // and class
	DurationMs    int64   `json:"durationMs"`    // how long it ran
	CooldownUntil *string `json:"cooldownUntil"` // its circuit's cooldown end (RFC 3339), null when none
}

// CircuitSnapshot is what a ProviderError's "circuit" member carries when a
// circuit decided: {key, state, cooldownUntil}.
type CircuitSnapshot struct {
	Key           string     `json:"key"`           // namespace, provider and scope
	State         string     `json:"state"`         // closed, open or probing
	CooldownUntil *time.Time `json:"cooldownUntil"` // null when closed
}
