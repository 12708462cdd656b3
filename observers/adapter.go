package observers

import (
	"path/filepath"
	"strings"
)

// Adapter names: which agent is behind the proxy. Adapter-scoped observers
// and catalogue rules apply only to their adapter.
const (
	AdapterCursor  = "cursor-acp"
	AdapterCodex   = "codex-acp"
	AdapterClaude  = "claude-agent-acp"
	AdapterGemini  = "gemini-cli"
	AdapterCopilot = "copilot-cli"
	AdapterQwen    = "qwen-code"
	AdapterKilo    = "kilo"
)

// NormalizeAdapter maps an agent's self-reported name (agentInfo.name) or
// command basename to an adapter name. Unknown names are returned
// lower-cased as they are, so scoped rules never fire for them.
func NormalizeAdapter(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" {
		return ""
	}
	n = strings.TrimPrefix(n, "@zed-industries/")
	switch n {
	case "cursor-agent", "cursor", "cursor-acp", "cursor agent":
		return AdapterCursor
	case "codex-acp", "codex":
		return AdapterCodex
	case "claude-agent-acp", "claude-code-acp", "claude-agent", "claude code":
		return AdapterClaude
	case "gemini-cli", "gemini", "gemini cli":
		return AdapterGemini
	case "copilot", "copilot-cli", "github-copilot", "github copilot":
		return AdapterCopilot
	case "qwen", "qwen-code", "qwen code":
		return AdapterQwen
	case "kilo", "kilocode", "kilo-code", "kilo code":
		return AdapterKilo
	}
	return n
}

// AdapterFromCommand derives the adapter from the agent command's
// basename (the last resort).
func AdapterFromCommand(argv0 string) string {
	base := filepath.Base(argv0)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	return NormalizeAdapter(base)
}

// Identity resolves the adapter in DESIGN.md's order: the explicit flag,
// the transcript's meta event, the agent's initialize agentInfo.name, the
// command's basename. Later sources are consulted only when earlier ones
// are empty.
type Identity struct {
	Flag      string
	Meta      string
	AgentInfo string
	Command   string
}

// Resolve returns the adapter and which source decided it.
func (id Identity) Resolve() (adapter, source string) {
	for _, c := range []struct{ v, src string }{
		{id.Flag, "flag"}, {id.Meta, "meta"}, {id.AgentInfo, "agentInfo"}, {id.Command, "command"},
	} {
		if c.v == "" {
			continue
		}
		if c.src == "command" {
			return AdapterFromCommand(c.v), c.src
		}
		return NormalizeAdapter(c.v), c.src
	}
	return "", ""
}
