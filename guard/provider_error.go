package guard

import (
	evt "github.com/acp-guard/acp-guard/event"

	"strings"
	"time"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/observers"
)

// Schema names the ProviderError format.
const Schema = evt.Schema

// The ProviderError and its members are package event's (the wire
// contract, docs/WIRE.md).
type (
	ProviderError = evt.ProviderError
	EvidenceFlags = evt.EvidenceFlags
	Recovery      = evt.Recovery
)

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
