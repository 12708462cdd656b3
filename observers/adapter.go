package observers

import (
	"path/filepath"
	"strings"

	"github.com/acp-guard/acp-guard/classify"
)

// Adapter names (the one list is classify's).
const (
	AdapterCursor  = classify.AdapterCursor
	AdapterCodex   = classify.AdapterCodex
	AdapterClaude  = classify.AdapterClaude
	AdapterGemini  = classify.AdapterGemini
	AdapterCopilot = classify.AdapterCopilot
	AdapterQwen    = classify.AdapterQwen
	AdapterKilo    = classify.AdapterKilo
	AdapterCline   = classify.AdapterCline
	AdapterPi      = classify.AdapterPi
)

// NormalizeAdapter maps an agent's self-reported name (agentInfo.name),
// npm package or command basename to an adapter name (classify's one
// mapping).
func NormalizeAdapter(name string) string { return classify.NormalizeAdapter(name) }

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
