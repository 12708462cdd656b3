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
)

// registry is the fixed code → class table of DESIGN.md. A catalogue may
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
}

// ClassOf returns the class of a semantic code. An unknown code is
// unclassified: it can never authorize recovery.
func ClassOf(code string) Class {
	if c, ok := registry[code]; ok {
		return c
	}
	return ClassUnclassified
}

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

// Adapters are the adapter names a rule may be scoped to, besides AnyAdapter.
var Adapters = []string{"codex-acp", "claude-agent-acp", "gemini-cli", "cursor-acp", "copilot-cli", "qwen-code", "kilo"}

// AnyAdapter scopes a rule to every adapter.
const AnyAdapter = "any"

// NormalizeAdapter maps the names an agent is known by (its initialize
// agentInfo.name, npm package, command basename, ProviderError source) to
// the adapter names rules are scoped to. Unknown names are returned
// lower-cased and trimmed of an npm scope.
func NormalizeAdapter(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:]
	}
	switch n {
	case "cursor-agent", "cursor_acp", "cursor", "cursor-acp":
		return "cursor-acp"
	case "claude-code-acp", "claude-agent-acp", "claude_agent_acp", "claude-code":
		return "claude-agent-acp"
	case "gemini", "gemini-cli", "gemini_cli":
		return "gemini-cli"
	case "codex-acp", "codex_acp", "codex":
		return "codex-acp"
	case "copilot", "copilot-cli", "copilot_cli", "github-copilot":
		return "copilot-cli"
	case "qwen", "qwen-code", "qwen_code":
		return "qwen-code"
	case "kilo", "kilocode", "kilo-code", "kilo_code":
		return "kilo"
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
