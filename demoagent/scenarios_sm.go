package demoagent

import (
	acp "github.com/coder/acp-go-sdk"
)

// Hostile scenarios for the recovery gate ("late activity"): the first
// prompt fails before any output, and in the very same write — so the
// frames reach the proxy in this order, whatever the machine's load — the
// agent shows that it is still working on the failed turn. Later prompts
// succeed, so a proxy that retried anyway would get a success.

// lateKind is one kind of late evidence.
type lateKind struct {
	name, what string
	frame      func(t *turn) []byte
}

var lateKinds = []lateKind{
	{"message", "a non-blank agent_message_chunk", func(t *turn) []byte {
		return textLine(t.sessionID, updateMessageChunk, "still working on it")
	}},
	{"thought", "a non-blank agent_thought_chunk", func(t *turn) []byte {
		return textLine(t.sessionID, updateThoughtChunk, "thinking again")
	}},
	{"tool-call", "a tool_call", func(t *turn) []byte {
		return updateLine(t.sessionID, acp.StartToolCall("late-1", "Read File", acp.WithStartKind(acp.ToolKindRead)))
	}},
	{"read", "an fs/read_text_file request", func(t *turn) []byte {
		return t.lateRequest(acp.ClientMethodFsReadTextFile, acp.ReadTextFileRequest{SessionId: acp.SessionId(t.sessionID), Path: "/tmp/demo-agent/late.txt"})
	}},
	{"permission", "a session/request_permission request", func(t *turn) []byte {
		title := "Write /tmp/demo-agent/late.txt"
		return t.lateRequest(acp.ClientMethodSessionRequestPermission, acp.RequestPermissionRequest{
			SessionId: acp.SessionId(t.sessionID),
			ToolCall:  acp.ToolCallUpdate{ToolCallId: "late-1", Title: &title},
			Options:   []acp.PermissionOption{{OptionId: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce}},
		})
	}},
	{"terminal", "a terminal/create request", func(t *turn) []byte {
		return t.lateRequest(acp.ClientMethodTerminalCreate, acp.CreateTerminalRequest{SessionId: acp.SessionId(t.sessionID), Command: "true"})
	}},
	{"unknown", "a request of an unknown method (_demo/poke)", func(t *turn) []byte {
		return t.lateRequest("_demo/poke", map[string]string{"sessionId": t.sessionID})
	}},
	{"non-json", "a stdout line that is not JSON", func(t *turn) []byte {
		return []byte("late diagnostics: not JSON\n")
	}},
}

func init() {
	for _, k := range lateKinds {
		scenarios = append(scenarios, &scenario{
			name:        "late-" + k.name,
			description: "the first prompt fails (--error, default like --agent-name's adapter), then at once " + k.what + " for the session; later prompts succeed",
			prompt:      promptLate(k),
		})
	}
}

func promptLate(k lateKind) func(t *turn) error {
	return func(t *turn) error {
		if t.n > 1 {
			return promptSuccess(t)
		}
		f, err := t.providerFailure("", t.failKind())
		if err != nil {
			return err
		}
		if f.rpc == nil { // Cursor fails with a chunk; the gate wants an error first
			f, _ = providerFailure(familyGeneric, KindTransient, t.a.opts.Now(), t.a.opts.ResetIn)
		}
		frame := append(errorLine(t.id, f.rpc), k.frame(t)...)
		return t.a.w.write(frame, true)
	}
}

// lateRequest is an agent→client request whose answer nobody waits for.
func (t *turn) lateRequest(method string, params any) []byte {
	t.a.mu.Lock()
	t.a.nextID++
	id := t.a.nextID
	t.a.mu.Unlock()
	return requestLine(id, method, params)
}
