package guard

import (
	"log/slog"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/observers"
)

// agent is what the guard learned about the agent it guards: its adapter
// (from the flag, initialize's agentInfo or the command) and its sessions
// — the models each offers and runs on, its compaction command, how its
// latest prompt ended (rare.go, lateoutput.go). Everything that names the
// agent or a session's model reads it here.
type agent struct {
	identity  observers.Identity
	adapter   string
	sessions  map[string]*sessionInfo
	fallbacks []string        // the fallback models, in order: the policy's, then Config.Fallback
	warned    map[string]bool // fallback models already warned about (rare.go)
	log       *slog.Logger
	ev        *emitter
}

// sessionInfo is what the guard learned about a session from the agent.
type sessionInfo struct {
	models       []string // available model ids (session/set_model)
	modelOption  string   // id of a model config option (session/set_config_option)
	optionValues []string
	currentModel string
	lastFailed   bool          // the session's latest prompt was answered with a failure
	compactCmd   string        // the compaction command the agent advertised last ("" : none; compact.go)
	answered     *answeredTurn // the latest answered prompt, until the next one starts (lateoutput.go)
}

// identify takes initialize's agentInfo: the adapter in effect, and where
// it came from.
func (a *agent) identify(info acp.Implementation) (source string) {
	a.identity.AgentInfo = info.Name
	a.adapter, source = a.identity.Resolve()
	return source
}

func (a *agent) session(id string) *sessionInfo {
	s := a.sessions[id]
	if s == nil {
		s = &sessionInfo{}
		a.sessions[id] = s
	}
	return s
}

// modelOf is the model p's current attempt runs on, "" when unknown.
func (a *agent) modelOf(p *prompt) string {
	if p.model != "" {
		return p.model
	}
	if s := a.sessions[p.session]; s != nil {
		return s.currentModel
	}
	return ""
}

// nextCandidate returns the next fallback model p's session can switch to.
func (a *agent) nextCandidate(p *prompt) (string, bool) {
	if cands := a.candidates(p); len(cands) > 0 {
		return cands[0], true
	}
	return "", false
}

// candidates returns, in order, the fallback models p's session can still
// switch to.
func (a *agent) candidates(p *prompt) []string {
	info := a.sessions[p.session]
	if info == nil || (len(info.models) == 0 && info.modelOption == "") {
		return nil // the agent cannot switch models
	}
	var out []string
	for _, m := range a.fallbacks {
		if m == info.currentModel || contains(p.tried, m) || contains(out, m) {
			continue
		}
		if !contains(info.models, m) && !contains(info.optionValues, m) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// noteOutcome remembers whether a session's latest prompt failed: an
// empty end_turn right after a failure is a stale-turn agent's answer
// (claude-agent-acp 0.23.1), flagged with afterFailure (silent.go).
func (a *agent) noteOutcome(p *prompt, rep TurnReport) {
	a.session(p.session).lastFailed = rep.ProviderError != nil || rep.Error != nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
