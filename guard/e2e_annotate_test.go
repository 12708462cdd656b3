package guard_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// Agent errors reach the client with the agent's code, message and data
// kept, plus data.providerError with the catalogue's verdict.
func TestE2EAnnotatedErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		args        []string
		code, class string
		provider    string
		direct      bool   // compare with the agent's own frame (no clock in it)
		hint        string // "retryAfterMs", "resetAt" or "" (neither)
	}{
		{"codex-error", []string{"--scenario", "codex-error"}, "agent_transport_lost", "transient", "codex-acp", true, ""},
		{"claude-error", []string{"--scenario", "claude-error"}, "provider_overloaded", "transient", "claude-agent-acp", true, ""},
		{"gemini-error", []string{"--scenario", "gemini-error"}, "rate_limited", "transient", "gemini-cli", true, "retryAfterMs"},
		{"auth-error", []string{"--scenario", "auth-error"}, "auth_required", "hard", "demo-agent", true, ""},
		{"context-overflow", []string{"--scenario", "context-overflow"}, "context_overflow", "request", "demo-agent", true, ""},
		{"unknown-error", []string{"--scenario", "unknown-error"}, "unclassified", "unclassified", "demo-agent", true, ""},
		{"quota-reset codex", []string{"--scenario", "quota-reset"}, "quota_limited", "hard", "codex-acp", true, "retryAfterMs"},
		{"quota-reset claude", []string{"--scenario", "quota-reset", "--agent-name", "claude-agent-acp", "--reset-in", "3h"},
			"quota_limited", "hard", "claude-agent-acp", false, "resetAt"},
		{"quota-reset gemini", []string{"--scenario", "quota-reset", "--agent-name", "gemini-cli"}, "quota_limited", "hard", "gemini-cli", true, "retryAfterMs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			frames := promptTurn(t, startProxy(t, nil, tt.args...))
			resp := acptest.ResponsesTo(frames, "3")
			if len(resp) != 1 || resp[0].Error == nil {
				t.Fatalf("responses to 3: got %d (%s), want one error", len(resp), frames[len(frames)-1].Raw)
			}
			got := resp[0]
			pe, rest := errorData(t, got)
			if pe.Code != tt.code || pe.Class != tt.class || pe.ProviderID != tt.provider {
				t.Errorf("providerError: got code %q class %q providerId %q, want %q %q %q", pe.Code, pe.Class, pe.ProviderID, tt.code, tt.class, tt.provider)
			}
			if !pe.ReplaySafe || pe.Recovery.Action != "stop" {
				t.Errorf("providerError: got replaySafe %v recovery %+v, want replaySafe and stop", pe.ReplaySafe, pe.Recovery)
			}
			switch tt.hint {
			case "retryAfterMs":
				if pe.RetryAfterMs == nil || *pe.RetryAfterMs <= 0 {
					t.Errorf("retryAfterMs: got %v, want a positive delay", pe.RetryAfterMs)
				}
			case "resetAt":
				at, err := time.Parse(time.RFC3339, deref(pe.ResetAt))
				if err != nil || !at.After(time.Now().Add(2*time.Hour)) {
					t.Errorf("resetAt: got %q (%v), want about 3 h from now", deref(pe.ResetAt), err)
				}
			default:
				if pe.RetryAfterMs != nil || pe.ResetAt != nil {
					t.Errorf("hints: got retryAfterMs %v resetAt %v, want none", pe.RetryAfterMs, deref(pe.ResetAt))
				}
			}
			if !tt.direct {
				return
			}
			dframes := promptTurn(t, startArgv(t, acptest.DemoAgent(t, tt.args...)...))
			want := dframes[len(dframes)-1]
			if want.Error == nil {
				t.Fatalf("the demo agent answered %s, want an error", want.Raw)
			}
			if got.Error.Code != want.Error.Code || got.Error.Message != want.Error.Message {
				t.Errorf("error: got %d %q, want the agent's %d %q", got.Error.Code, got.Error.Message, want.Error.Code, want.Error.Message)
			}
			var wantData map[string]json.RawMessage
			if want.Error.Data != nil {
				if err := json.Unmarshal(want.Error.Data, &wantData); err != nil {
					t.Fatalf("agent data %s: %v", want.Error.Data, err)
				}
			}
			if len(rest) != len(wantData) {
				t.Errorf("data members besides providerError: got %d, want the agent's %d (%s)", len(rest), len(wantData), want.Error.Data)
			}
			for k, v := range wantData {
				if !bytes.Equal(rest[k], v) {
					t.Errorf("data.%s: got %s, want the agent's %s", k, rest[k], v)
				}
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// An agent that dies mid-turn: the pending prompt gets one error carrying
// the exit and a ProviderError whose recovery reason is agent_exited.
func TestE2EAgentDeathMidTurn(t *testing.T) {
	t.Parallel()
	p := startProxy(t, []string{"--policy", acptest.RetryPolicy(t, 3, 1)}, "--scenario", "crash", "--exit-code", "3")
	_, sid := p.Open()
	p.Send(acptest.Prompt(3, sid))
	frames := p.Until("3")
	rest, code := p.Finish()
	if n := len(acptest.ResponsesTo(append(frames, rest...), "3")); n != 1 {
		t.Fatalf("responses to 3: got %d, want 1", n)
	}
	resp := frames[len(frames)-1]
	pe, data := errorData(t, resp)
	var exit struct {
		Code int `json:"code"`
	}
	if err := json.Unmarshal(data["agentExit"], &exit); err != nil || exit.Code != 3 {
		t.Errorf("data.agentExit: got %s (%v), want code 3", data["agentExit"], err)
	}
	if pe.Recovery.Action != "stop" || pe.Recovery.Reason != "agent_exited" {
		t.Errorf("recovery: got %+v, want stop/agent_exited", pe.Recovery)
	}
	if pe.ReplaySafe || !pe.Evidence.AssistantOutput {
		t.Errorf("providerError: got replaySafe %v evidence %+v, want unsafe with assistant output", pe.ReplaySafe, pe.Evidence)
	}
	if code != 3 {
		t.Errorf("acp-guard exit code: got %d, want the agent's 3", code)
	}
}
