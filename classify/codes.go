package classify

import (
	"sort"
	"strings"
)

// Semantic codes. The names are stable: they appear in ProviderError.code
// and in attempt logs. Each code belongs to exactly one class (see ClassOf).
const (
	CodeNetworkUnavailable    = "network_unavailable"
	CodeProviderUnavailable   = "provider_unavailable"
	CodeProviderOverloaded    = "provider_overloaded"
	CodeModelCapacity         = "model_capacity"
	CodeRateLimited           = "rate_limited"
	CodeAgentTransportLost    = "agent_transport_lost"
	CodeEmptyResponse         = "empty_response"
	CodeQuotaLimited          = "quota_limited"
	CodeSubscriptionRequired  = "subscription_required"
	CodeAuthRequired          = "auth_required"
	CodeMissingCredentials    = "missing_credentials"
	CodeProviderNotConfigured = "provider_not_configured"
	CodeModelUnavailable      = "model_unavailable"
	CodeContextOverflow       = "context_overflow"
	CodeInvalidRequest        = "invalid_request"
	CodeContentRefused        = "content_refused"
	CodeUnclassified          = "unclassified"
	// Guard-made codes (no catalogue rule produces them): the stall
	// watchdog, and the abnormal stop reasons max_tokens and
	// max_turn_requests (annotations only).
	CodeAgentStalled    = "agent_stalled"
	CodeMaxTokens       = "max_tokens"
	CodeMaxTurnRequests = "max_turn_requests"
)

// registry is the fixed code → class table (docs/CATALOGUE.md). A catalogue may
// only use codes listed here; adding a code means adding it here, with its
// class, in the same change.
var registry = map[string]Class{
	CodeNetworkUnavailable:    ClassTransient,
	CodeProviderUnavailable:   ClassTransient,
	CodeProviderOverloaded:    ClassTransient,
	CodeModelCapacity:         ClassTransient,
	CodeRateLimited:           ClassTransient,
	CodeAgentTransportLost:    ClassTransient,
	CodeEmptyResponse:         ClassTransient,
	CodeQuotaLimited:          ClassHard,
	CodeSubscriptionRequired:  ClassHard,
	CodeAuthRequired:          ClassHard,
	CodeMissingCredentials:    ClassHard,
	CodeProviderNotConfigured: ClassHard,
	CodeModelUnavailable:      ClassHard,
	CodeContextOverflow:       ClassRequest,
	CodeInvalidRequest:        ClassRequest,
	CodeContentRefused:        ClassRequest,
	CodeUnclassified:          ClassUnclassified,
	CodeAgentStalled:          ClassUnclassified,
	CodeMaxTokens:             ClassRequest,
	CodeMaxTurnRequests:       ClassRequest,
}

// ClassOf returns the class of a semantic code. An unknown code is
// unclassified: it can never authorize recovery.
func ClassOf(code string) Class {
	if c, ok := registry[code]; ok {
		return c
	}
	return ClassUnclassified
}

// SameKind reports whether two codes name the same kind of failure, the
// test a lower-ranked piece of evidence passes to refine a verdict
// (Engine.Classify): a connection that never got an answer from the
// provider (network_unavailable, agent_transport_lost) is one kind, a
// provider's answer (a status, an error body) another. A 500 the agent
// reports is not refined into a DNS failure its stderr names: that line is
// about another request (a telemetry export, an update check).
func SameKind(a, b string) bool { return connectionKind(a) == connectionKind(b) }

func connectionKind(code string) bool {
	return code == CodeNetworkUnavailable || code == CodeAgentTransportLost
}

// sameProviderOnly are the codes whose failures are evidence for
// recovering on the same provider and model only: a lost agent transport
// says nothing against the model.
var sameProviderOnly = map[string]bool{CodeAgentTransportLost: true}

// SameProviderOnly reports whether a failure with code may be recovered on
// the same provider and model only: it never authorizes switching to a
// fallback model (the guard stops a skip of it, same_provider_only).
func SameProviderOnly(code string) bool { return sameProviderOnly[code] }

// KnownCode reports whether code is in the registry.
func KnownCode(code string) bool {
	_, ok := registry[code]
	return ok
}

// Codes returns every registered code, sorted.
func Codes() []string {
	out := make([]string, 0, len(registry))
	for c := range registry {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Adapter names: which agent is behind the proxy. Adapter-scoped rules
// and observers apply only to their adapter. This is the one list.
const (
	AdapterCursor  = "cursor-acp"
	AdapterCodex   = "codex-acp"
	AdapterClaude  = "claude-agent-acp"
	AdapterGemini  = "gemini-cli"
	AdapterCopilot = "copilot-cli"
	AdapterQwen    = "qwen-code"
	AdapterKilo    = "kilo"
	AdapterCline   = "cline"
	AdapterPi      = "pi-acp"
)

// Adapters are the adapter names a rule may be scoped to, besides AnyAdapter.
var Adapters = []string{AdapterCodex, AdapterClaude, AdapterGemini, AdapterCursor, AdapterCopilot, AdapterQwen, AdapterKilo,
	AdapterCline, AdapterPi}

// AnyAdapter scopes a rule to every adapter.
const AnyAdapter = "any"

// NormalizeAdapter maps the names an agent is known by (its initialize
// agentInfo.name, npm package, command basename, ProviderError source) to
// the adapter names. Unknown names are returned lower-cased and trimmed of
// an npm scope, so scoped rules never fire for them.
func NormalizeAdapter(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:]
	}
	switch n {
	case "cursor-agent", "cursor_acp", "cursor", "cursor-acp", "cursor agent":
		return AdapterCursor
	case "claude-code-acp", "claude-agent-acp", "claude_agent_acp", "claude-code", "claude-agent", "claude code":
		return AdapterClaude
	case "gemini", "gemini-cli", "gemini_cli", "gemini cli":
		return AdapterGemini
	case "codex-acp", "codex_acp", "codex":
		return AdapterCodex
	case "copilot", "copilot-cli", "copilot_cli", "github-copilot", "github copilot":
		return AdapterCopilot
	case "qwen", "qwen-code", "qwen_code", "qwen code":
		return AdapterQwen
	case "kilo", "kilocode", "kilo-code", "kilo_code", "kilo code":
		return AdapterKilo
	case "cline", "cline-cli", "cline_cli", "cline cli":
		return AdapterCline
	case "pi", "pi-acp", "pi_acp", "pi acp", "pi-coding-agent":
		return AdapterPi
	}
	return n
}

func knownAdapter(a string) bool {
	if a == AnyAdapter {
		return true
	}
	for _, k := range Adapters {
		if a == k {
			return true
		}
	}
	return false
}

func knownSource(s Source) bool {
	switch s {
	case SourceRPCError, SourceMessageChunk, SourceStderr, SourceExit, SourceHTTP:
		return true
	}
	return false
}
