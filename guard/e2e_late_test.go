package guard_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// The gate holds until dispatch: an agent that fails a prompt and then,
// for the same session, shows any sign of still working on it — before
// the retry, the attempt after a reset wait, or the model switch's retry
// is dispatched — gets no second prompt; the client gets one ProviderError
// (replaySafe false, recovery.reason late_activity, the evidence flagged)
// and every late frame forwarded untouched. Through the built binary, for
// each kind of late evidence (demoagent/scenarios_sm.go) in each held
// state. Without the gate each case ends in the retry's end_turn.
func TestE2ELateActivityStopsRecovery(t *testing.T) {
	t.Parallel()
	// Delays long enough that the late frame, written together with the
	// failure, always arrives first; short enough that a proxy without the
	// gate retries (and fails this test) well before the watchdog.
	holds := []struct {
		name  string
		flags []string
		args  []string // demo-agent arguments after the scenario
	}{
		{"retry_wait", []string{"--policy", acptest.RetryPolicy(t, 3, 20)}, []string{"--agent-name", "@zed-industries/claude-agent-acp"}},
		{"waiting_for_reset", []string{"--policy", resetPolicyFile(t)}, []string{"--agent-name", "codex-acp", "--error", "quota", "--reset-in", "20s"}},
		{"switching", []string{"--fallback-models", "model-b"}, []string{"--agent-name", "@zed-industries/claude-agent-acp"}},
	}
	kinds := []struct {
		name   string
		flag   func(e e2eLateEvidence) bool
		method string // the agent request forwarded to the client, if any
		raw    bool   // a non-JSON line reaches the client
	}{
		{"message", func(e e2eLateEvidence) bool { return e.AssistantOutput }, "", false},
		{"thought", func(e e2eLateEvidence) bool { return e.Thoughts }, "", false},
		{"tool-call", func(e e2eLateEvidence) bool { return e.ToolActivity }, "", false},
		{"read", func(e e2eLateEvidence) bool { return e.AgentRequests }, "fs/read_text_file", false},
		{"permission", func(e e2eLateEvidence) bool { return e.AgentRequests && e.Effects }, "session/request_permission", false},
		{"terminal", func(e e2eLateEvidence) bool { return e.AgentRequests && e.Effects }, "terminal/create", false},
		{"unknown", func(e e2eLateEvidence) bool { return e.AgentRequests }, "_demo/poke", false},
		{"non-json", func(e e2eLateEvidence) bool { return e.Unparseable }, "", true},
	}
	for _, h := range holds {
		for _, k := range kinds {
			t.Run(h.name+"/"+k.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				rec := filepath.Join(dir, "session.jsonl")
				flags := append([]string{"--record", rec, "--state-dir", filepath.Join(dir, "state")}, h.flags...)
				args := append([]string{"--scenario", "late-" + k.name}, h.args...)
				p := startProxy(t, flags, args...)
				_, sid := p.Open()
				p.Send(acptest.Prompt(3, sid))
				frames, raws := readLenient(t, p, "3")
				rest, nonJSON := drainLenient(t, p)
				frames, raws = append(frames, rest...), raws+nonJSON
				resp := acptest.ResponsesTo(frames, "3")
				if len(resp) != 1 {
					t.Fatalf("responses to 3: got %d, want 1", len(resp))
				}
				if resp[0].Error == nil {
					t.Fatalf("prompt 3 answered %s: recovered despite late activity", resp[0].Raw)
				}
				pe, _ := errorData(t, resp[0])
				var ev struct {
					Evidence e2eLateEvidence `json:"evidence"`
				}
				var data map[string]json.RawMessage
				_ = json.Unmarshal(resp[0].Error.Data, &data)
				_ = json.Unmarshal(data["providerError"], &ev)
				if pe.Recovery.Reason != "late_activity" || pe.Recovery.Action != "stop" || pe.ReplaySafe || !k.flag(ev.Evidence) {
					t.Errorf("providerError: got recovery %+v replaySafe %v evidence %+v, want stop late_activity, not replay-safe, the %s flagged",
						pe.Recovery, pe.ReplaySafe, ev.Evidence, k.name)
				}
				if n, _ := promptsToAgent(t, transcript(t, rec)); n != 1 {
					t.Errorf("prompts the agent saw: got %d, want 1", n)
				}
				if k.method != "" && !hasRequest(frames, k.method) {
					t.Errorf("the agent's %s request did not reach the client", k.method)
				}
				if k.raw && raws == 0 {
					t.Errorf("the non-JSON line did not reach the client")
				}
			})
		}
	}
}

// e2eLateEvidence is the ProviderError's evidence with the gate's flags.
type e2eLateEvidence struct {
	AssistantOutput bool `json:"assistantOutput"`
	Thoughts        bool `json:"thoughts"`
	ToolActivity    bool `json:"toolActivity"`
	Effects         bool `json:"effects"`
	AgentRequests   bool `json:"agentRequests"`
	Unparseable     bool `json:"unparseable"`
}

// resetPolicyFile waits for a trusted reset of a hard failure (quota) up
// to an hour, and never retries.
func resetPolicyFile(t *testing.T) string {
	t.Helper()
	return acptest.WriteFile(t, "policy.json", `{"version":1,
"transient":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":true,"max_wait_seconds":3600},"on_exhausted":"stop"}}`)
}

// readLenient reads stdout frames up to the response to id, counting
// (instead of failing on) lines that are not JSON.
func readLenient(t *testing.T, p *acptest.Proc, id string) (frames []acptest.Frame, nonJSON int) {
	t.Helper()
	for {
		f, err := acptest.Parse(p.Line())
		if err != nil {
			nonJSON++
			continue
		}
		frames = append(frames, f)
		if f.Answers(id) {
			return frames, nonJSON
		}
	}
}

// drainLenient closes stdin and reads the rest of stdout like readLenient.
func drainLenient(t *testing.T, p *acptest.Proc) (frames []acptest.Frame, nonJSON int) {
	t.Helper()
	p.CloseStdin()
	for {
		b, err := p.ReadLine()
		if len(b) > 0 {
			if f, perr := acptest.Parse(b); perr != nil {
				nonJSON++
			} else {
				frames = append(frames, f)
			}
		}
		if err != nil {
			break
		}
	}
	p.Wait()
	return frames, nonJSON
}

func hasRequest(frames []acptest.Frame, method string) bool {
	for _, f := range frames {
		if f.Method == method && f.ID != nil {
			return true
		}
	}
	return false
}

// An attempt log that cannot be written stops recovery: no retry without
// its record. The log's name is a symbolic link (refused) or taken by a
// directory (both refuse even root). A state directory that cannot be
// written at all is a configuration error at start (cmd/acp-guard,
// TestE2EConfigMistakesOnTheWire).
func TestE2EStateUnwritableStopsRecovery(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		state func(t *testing.T) string
	}{
		{"log name is a symbolic link", func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(dir, "attempts.jsonl")); err != nil {
				t.Fatal(err)
			}
			return dir
		}},
		{"log name taken by a directory", func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "attempts.jsonl"), 0o700); err != nil {
				t.Fatal(err)
			}
			return dir
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := filepath.Join(t.TempDir(), "session.jsonl")
			p := startProxy(t, []string{"--record", rec, "--state-dir", tt.state(t), "--policy", acptest.RetryPolicy(t, 3, 1)},
				"--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "@zed-industries/claude-agent-acp")
			_, sid := p.Open()
			p.Send(acptest.Prompt(3, sid))
			frames := p.Until("3")
			rest, _ := p.Finish()
			resp := acptest.ResponsesTo(append(frames, rest...), "3")
			if len(resp) != 1 || resp[0].Error == nil {
				t.Fatalf("responses to 3: got %d, want one error (%s)", len(resp), frames[len(frames)-1].Raw)
			}
			pe, _ := errorData(t, resp[0])
			if pe.Recovery.Reason != "state_unwritable" || pe.Code != "provider_overloaded" {
				t.Errorf("providerError: got %s recovery %+v, want provider_overloaded stopped with state_unwritable", pe.Code, pe.Recovery)
			}
			if n, _ := promptsToAgent(t, transcript(t, rec)); n != 1 {
				t.Errorf("prompts the agent saw: got %d, want 1", n)
			}
			if n := len(retryNotices(t, frames)); n != 0 {
				t.Errorf("retry notices: got %d, want none (nothing was scheduled)", n)
			}
			if !strings.Contains(p.Stderr.String(), "attempt log unwritable") {
				t.Errorf("stderr does not say the attempt log is unwritable:\n%s", p.Stderr.String())
			}
		})
	}
}
