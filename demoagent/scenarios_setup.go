package demoagent

import (
	"encoding/json"

	acp "github.com/coder/acp-go-sdk"
)

// Scenarios that fail before any prompt: the session set-up and the
// launch (phase session_setup and launch in a ProviderError).
func init() {
	scenarios = append(scenarios,
		&scenario{name: "setup-error",
			description: "session/new fails with --error (default auth), shaped like --agent-name's adapter; prompts are never reached",
			request:     requestSetupError, prompt: promptSuccess},
		&scenario{name: "exit-at-start", agentName: "codex-acp",
			description: "reads initialize, says on stderr that its API key is not set, and exits --exit-code without answering",
			request:     requestExitAtStart, prompt: promptSuccess},
	)
}

// requestSetupError answers session/new with the provider failure of
// --error (default: auth) as the agent's adapter reports it.
func requestSetupError(a *agent, m *inbound) bool {
	if m.Method != acp.AgentMethodSessionNew {
		return false
	}
	kind := a.opts.Error
	if kind == "" {
		kind = KindAuth
	}
	f, err := providerFailure(familyOf(a.opts.AgentName), kind, a.opts.Now(), a.opts.ResetIn)
	if err != nil || f.rpc == nil {
		text := f.chunk // a failure reported as text: made a JSON-RPC error
		if err != nil {
			text = err.Error()
		}
		f.rpc = &rpcError{Code: codeInternalError, Message: text}
	}
	_ = a.w.write(errorLine(m.ID, f.rpc), true)
	return true
}

// requestExitAtStart ends the process at initialize, as an agent without
// credentials does.
func requestExitAtStart(a *agent, m *inbound) bool {
	if m.Method != acp.AgentMethodInitialize {
		return false
	}
	a.logf("Error: OPENAI_API_KEY not set (request %s)", json.RawMessage(m.ID))
	select {
	case a.exit <- &ExitError{Code: a.opts.ExitCode}:
	default:
	}
	return true
}
