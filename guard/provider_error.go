package guard

import (
	"strings"
	"time"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/observers"
)

// Schema names the ProviderError format.
const Schema = "acp-guard.provider-error/1"

// ProviderError is the structured failure added to a JSON-RPC error's data
// under "providerError": the wire contract. Field order is the wire order;
// fields are only ever added, and optional ones are omitted when empty.
type ProviderError struct {
	Schema           string        `json:"schema"`
	Code             string        `json:"code"`
	Class            string        `json:"class"`
	Confidence       string        `json:"confidence"`
	Scope            string        `json:"scope"`
	Rule             string        `json:"rule"`
	CatalogueVersion string        `json:"catalogueVersion"`
	Source           string        `json:"source"`
	ProviderID       string        `json:"providerId"`
	SessionID        string        `json:"sessionId"`
	Generation       int64         `json:"generation"`
	Phase            string        `json:"phase"`
	OccurredAt       string        `json:"occurredAt"`
	RetryAfterMs     *int64        `json:"retryAfterMs"`
	ResetAt          *string       `json:"resetAt"`
	ReplaySafe       bool          `json:"replaySafe"`
	Evidence         EvidenceFlags `json:"evidence"`
	SafeExcerpt      string        `json:"safeExcerpt"`
	Reason           string        `json:"reason,omitempty"`    // why unclassified: no_match, conflict, stale
	Conflicts        []string      `json:"conflicts,omitempty"` // rule ids of a conflict
	// Model is the model the failed attempt ran on, when the agent told
	// (session/new|load results, session/set_model, the model config
	// option) or a fallback switched to it.
	Model string `json:"model,omitempty"`
	// AgentRetries counts the agent's own visible retries in the failed
	// attempt (its retry notes, re-streamed answers, the retries it stated
	// in its error) before it gave up.
	AgentRetries int      `json:"agentRetries,omitempty"`
	Recovery     Recovery `json:"recovery"`
	// After a fallback chain (each fallback model tried with circuits): every failed attempt,
	// the earliest cooldown end among them, and whether something other
	// than exhaustion ended the chain.
	Attempts       []Attempt `json:"attempts,omitempty"`
	SoonestRetryAt *string   `json:"soonestRetryAt,omitempty"`
	Aborted        bool      `json:"aborted,omitempty"`
	// Circuit is the circuit that decided (recovery.reason circuit_open).
	Circuit *circuit.Snapshot `json:"circuit,omitempty"`
}

// EvidenceFlags are the turn's evidence as the client sees it.
type EvidenceFlags struct {
	AssistantOutput bool `json:"assistantOutput"`
	Thoughts        bool `json:"thoughts"`
	ToolActivity    bool `json:"toolActivity"`
	Effects         bool `json:"effects,omitempty"`
	Cancelled       bool `json:"cancelled,omitempty"`
	AgentExited     bool `json:"agentExited,omitempty"`
	AgentRequests   bool `json:"agentRequests,omitempty"` // an agent→client request while the turn was held
	Unparseable     bool `json:"unparseable,omitempty"`   // an unparseable stdout line
	// Set by the stall watchdog: how long the agent sent nothing, and
	// what it sent last ("nothing" when nothing came in the turn).
	StalledMs int64  `json:"stalledMs,omitempty"`
	LastFrame string `json:"lastFrame,omitempty"`
}

// Recovery says what acp-guard did about the failure.
type Recovery struct {
	Action     string `json:"action"` // stop (the final answer), or retry/wait/skip in the attempt log
	Attempt    int    `json:"attempt"`
	MaxRetries int    `json:"maxRetries"`
	Reason     string `json:"reason,omitempty"`
	// By is who stopped the prompt with an action (reason stop_now):
	// "client" or "operator".
	By string `json:"by,omitempty"`
}

// sourceFor is the ProviderError.source for an adapter ("cursor-acp" →
// "cursor_acp"); unknown adapters report the evidence source.
func sourceFor(adapter string, ev classify.Source) string {
	if adapter == "" {
		return string(ev)
	}
	return strings.NewReplacer("-", "_", "@", "", "/", "_").Replace(adapter)
}

func newProviderError(v classify.Verdict, t *observers.Turn, adapter string, src classify.Source, now time.Time) ProviderError {
	pe := ProviderError{
		Schema:           Schema,
		Code:             v.Code,
		Class:            string(v.Class),
		Confidence:       v.Confidence,
		Scope:            v.Scope,
		Rule:             v.Rule,
		CatalogueVersion: v.CatalogueVersion,
		Source:           sourceFor(adapter, src),
		ProviderID:       adapter,
		Phase:            "prompt",
		OccurredAt:       now.UTC().Format("2006-01-02T15:04:05.000Z"),
		SafeExcerpt:      v.SafeExcerpt,
		Reason:           v.Reason,
		Conflicts:        v.Conflicts,
	}
	if pe.ProviderID == "" {
		pe.ProviderID = "unknown"
	}
	if t != nil {
		pe.SessionID = t.SessionID
		pe.Generation = t.Generation
		pe.ReplaySafe = t.ReplaySafe()
		pe.Evidence = evidenceFlags(t.Evidence)
		pe.AgentRetries = t.AgentRetries()
	}
	hints := v.Timing()
	pe.RetryAfterMs, pe.ResetAt = hints.RetryAfterMs, hints.ResetAt
	return pe
}

func evidenceFlags(e observers.Evidence) EvidenceFlags {
	return EvidenceFlags{
		AssistantOutput: e.AssistantOutput,
		Thoughts:        e.Thoughts,
		ToolActivity:    e.ToolActivity || e.ToolUpdates > 0,
		Effects:         e.Effects > 0,
		Cancelled:       e.Cancelled,
		AgentExited:     e.Exited,
		Unparseable:     e.Unparseable > 0,
	}
}
