package guard_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/testbin"
	"github.com/acp-guard/acp-guard/policy"
)

// recoveryRun is one prompt through acp-guard with a recording: the
// client's frames up to the prompt's answer, everything after it, and the
// session/prompt frames the agent received.
type recoveryRun struct {
	frames, rest    []e2eFrame
	prompts, viaPxy int
	stateDir        string
}

func runRecovery(t *testing.T, flags []string, agentArgs ...string) recoveryRun {
	t.Helper()
	dir := t.TempDir()
	rec := filepath.Join(dir, "session.jsonl")
	state := filepath.Join(dir, "state")
	flags = append([]string{"--record", rec, "--state-dir", state}, flags...)
	p := startProxy(t, flags, agentArgs...)
	_, sid := p.open()
	p.send(e2ePrompt(3, sid))
	r := recoveryRun{frames: p.until("3"), stateDir: state}
	r.rest, _ = p.finish()
	if n := len(responsesTo(r.rest, "3")); n != 0 {
		t.Errorf("prompt 3 answered %d more times", n)
	}
	r.prompts, r.viaPxy = promptsToAgent(t, transcript(t, rec))
	return r
}

func (r recoveryRun) answer() e2eFrame { return r.frames[len(r.frames)-1] }

func TestE2ERetryThenSucceed(t *testing.T) {
	t.Parallel()
	pol := retryPolicyFile(t, 3, 1)
	for _, tt := range []struct {
		name    string
		notices string // --notices; "" for the default (thought)
		fail    string
		kind    string // the notices' sessionUpdate; "" for none
	}{
		{"fail twice, thought notices", "", "2", "agent_thought_chunk"},
		{"message notices", "message", "1", "agent_message_chunk"},
		{"notices off", "off", "1", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			flags := []string{"--policy", pol, "--jitter-seed", "42"}
			if tt.notices != "" {
				flags = append(flags, "--notices", tt.notices)
			}
			r := runRecovery(t, flags, "--scenario", "fail-then-succeed", "--fail", tt.fail, "--agent-name", "@zed-industries/claude-agent-acp")
			fails := int(tt.fail[0] - '0')
			resp := responsesTo(r.frames, "3")
			if len(resp) != 1 || stopReason(t, resp[0]) != "end_turn" {
				t.Fatalf("responses to 3: got %d ending in %s, want one end_turn", len(resp), r.answer().raw)
			}
			if r.prompts != fails+1 || r.viaPxy != fails {
				t.Errorf("prompts the agent saw: got %d (%d via guard), want %d (%d via guard)", r.prompts, r.viaPxy, fails+1, fails)
			}
			notices := retryNotices(t, r.frames)
			wantN := fails
			if tt.kind == "" {
				wantN = 0
			}
			if len(notices) != wantN {
				t.Fatalf("retry notices: got %d, want %d", len(notices), wantN)
			}
			// Full jitter, seeded: the delays are the seed's draws from
			// [0, 1 s], [0, 2 s], … in order, never under the shared
			// circuits' least cooldown (1 s; the proxy keeps circuits in
			// its state directory).
			jitter := policy.NewJitter(42)
			for i, n := range notices {
				rm := n.Meta.AcpGuard.Retry
				delay := max(jitter(time.Duration(1000<<i)*time.Millisecond), time.Second).Milliseconds()
				want := e2eRetry{Attempt: i + 1, MaxRetries: 3, DelayMs: delay, Code: "provider_overloaded", Class: "transient", Action: "retry", Deadline: rm.Deadline}
				if n.SessionUpdate != tt.kind || *rm != want || !strings.HasSuffix(rm.Deadline, "Z") || n.Content.Text == "" {
					t.Errorf("notice %d: got %s %q %+v, want %s with %+v", i, n.SessionUpdate, n.Content.Text, *rm, tt.kind, want)
				}
			}
			var text strings.Builder
			for _, f := range r.frames {
				if u, ok := f.update(t); ok && u.SessionUpdate == "agent_message_chunk" && u.Meta.AcpGuard.Retry == nil {
					text.WriteString(u.Content.Text)
				}
			}
			if !strings.Contains(text.String(), "This is the answer.") {
				t.Errorf("answer text: got %q, want the successful attempt's chunks", text.String())
			}
		})
	}
}

// The attempt log of a recovered prompt, and the attempts command.
func TestE2EAttemptLog(t *testing.T) {
	t.Parallel()
	r := runRecovery(t, []string{"--policy", retryPolicyFile(t, 3, 1)},
		"--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp")
	if stopReason(t, r.answer()) != "end_turn" {
		t.Fatalf("prompt answered %s", r.answer().raw)
	}
	st, err := os.Stat(r.stateDir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("state dir: got %v (%v), want mode 0700", st.Mode(), err)
	}
	path := filepath.Join(r.stateDir, policy.LogFileName)
	st, err = os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("attempt log: got %v (%v), want mode 0600", st, err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec policy.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("attempt log line %q: %v", sc.Text(), err)
		}
		if rec.SessionID != "sess-1" || rec.RequestID != "3" {
			t.Errorf("record for %s/%s, want sess-1/3", rec.SessionID, rec.RequestID)
		}
		got = append(got, string(rec.Outcome)+"/"+string(rec.Decision.Action)+"/"+rec.Code)
	}
	want := []string{"scheduled/retry/agent_transport_lost", "succeeded/none/"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("records: got %v, want %v", got, want)
	}
	out, err := exec.Command(testbin.Path(t), "attempts", "--state-dir", r.stateDir).CombinedOutput()
	if err != nil {
		t.Fatalf("acp-guard attempts: %v\n%s", err, out)
	}
	s := string(out)
	i, j := strings.Index(s, "scheduled"), strings.Index(s, "succeeded")
	if i < 0 || j < i || !strings.Contains(s, "sess-1") || !strings.Contains(s, "agent_transport_lost") {
		t.Errorf("acp-guard attempts printed:\n%s\nwant sess-1, scheduled then succeeded, agent_transport_lost", s)
	}
}

// Failures the policy or the gate does not recover: the client gets the
// annotated error and the agent saw one prompt (or the retries allowed).
func TestE2ERecoveryStops(t *testing.T) {
	t.Parallel()
	pol := retryPolicyFile(t, 2, 1)
	for _, tt := range []struct {
		name             string
		args             []string
		prompts          int
		code             string
		reason           string // recovery.reason; "" to skip the check
		attempt, max     int
		replaySafe, text bool
	}{
		{name: "text then fail", args: []string{"--scenario", "text-then-fail", "--agent-name", "codex-acp"},
			prompts: 1, code: "agent_transport_lost", reason: "unsafe", max: 2, text: true},
		{name: "hard failure, stop policy", args: []string{"--scenario", "auth-error", "--agent-name", "codex-acp"},
			prompts: 1, code: "auth_required", replaySafe: true},
		{name: "exhausted", args: []string{"--scenario", "fail-then-succeed", "--fail", "5", "--agent-name", "codex-acp"},
			prompts: 3, code: "agent_transport_lost", attempt: 2, max: 2, replaySafe: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runRecovery(t, []string{"--policy", pol}, tt.args...)
			resp := responsesTo(r.frames, "3")
			if len(resp) != 1 {
				t.Fatalf("responses to 3: got %d, want 1", len(resp))
			}
			pe, _ := errorData(t, resp[0])
			if pe.Code != tt.code || pe.Recovery.Action != "stop" || pe.Recovery.Attempt != tt.attempt || pe.Recovery.MaxRetries != tt.max ||
				(tt.reason != "" && pe.Recovery.Reason != tt.reason) {
				t.Errorf("providerError: got %s recovery %+v, want %s stop attempt %d/%d reason %q", pe.Code, pe.Recovery, tt.code, tt.attempt, tt.max, tt.reason)
			}
			if pe.ReplaySafe != tt.replaySafe || pe.Evidence.AssistantOutput != tt.text {
				t.Errorf("providerError: got replaySafe %v evidence %+v, want replaySafe %v assistantOutput %v", pe.ReplaySafe, pe.Evidence, tt.replaySafe, tt.text)
			}
			if r.prompts != tt.prompts || r.viaPxy != tt.prompts-1 {
				t.Errorf("prompts the agent saw: got %d (%d via guard), want %d", r.prompts, r.viaPxy, tt.prompts)
			}
			if n := len(retryNotices(t, r.frames)); n != tt.prompts-1 {
				t.Errorf("retry notices: got %d, want %d", n, tt.prompts-1)
			}
		})
	}
}

// Fallback: the bad model fails (overloaded), the guard switches to
// model-b and the answer says so. (A lost transport, codex's usual
// transient shape, never switches models: see TestTransportLossNeverSwitchesModels.)
func TestE2EFallbackModel(t *testing.T) {
	t.Parallel()
	r := runRecovery(t, []string{"--fallback-models", "model-b"}, "--scenario", "fail-model", "--bad-model", "model-a", "--agent-name", "@zed-industries/claude-agent-acp")
	resp := r.answer()
	if stopReason(t, resp) != "end_turn" {
		t.Fatalf("prompt answered %s", resp.raw)
	}
	var res struct {
		Meta struct {
			AcpGuard struct {
				Model string `json:"model"`
			} `json:"acpGuard"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil || res.Meta.AcpGuard.Model != "model-b" {
		t.Errorf("result: got %s, want _meta.acpGuard.model model-b", resp.Result)
	}
	var text string
	for _, f := range r.frames {
		if u, ok := f.update(t); ok && u.SessionUpdate == "agent_message_chunk" {
			text += u.Content.Text
		}
	}
	if text != "Answer from model-b." {
		t.Errorf("answer: got %q, want the text of model-b", text)
	}
	if r.prompts != 2 || r.viaPxy != 1 {
		t.Errorf("prompts the agent saw: got %d (%d via guard), want 2 (1)", r.prompts, r.viaPxy)
	}
}

// A session/cancel during a wait answers the prompt "cancelled" once and
// the agent never sees a second prompt; a client that goes away during a
// wait gets at most one answer, and acp-guard exits without retrying.
func TestE2ECancelDuringWait(t *testing.T) {
	t.Parallel()
	// An hour: a timer that outlived the cancel would hang the test until
	// the watchdog, not retry.
	pol := retryPolicyFile(t, 3, 3600)
	for _, tt := range []struct {
		name       string
		disconnect bool
	}{
		{"session/cancel", false},
		{"client disconnect", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := filepath.Join(t.TempDir(), "session.jsonl")
			p := startProxy(t, []string{"--policy", pol, "--record", rec, "--state-dir", t.TempDir()},
				"--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp")
			_, sid := p.open()
			p.send(e2ePrompt(3, sid))
			var frames []e2eFrame
			for len(retryNotices(t, frames)) == 0 {
				f := p.next()
				if f.isResponse() {
					t.Fatalf("prompt answered before the wait: %s", f.raw)
				}
				frames = append(frames, f)
			}
			if !tt.disconnect {
				p.send(e2eCancel(sid))
				frames = append(frames, p.until("3")...)
			}
			rest, _ := p.finish()
			frames = append(frames, rest...)
			resp := responsesTo(frames, "3")
			switch {
			case tt.disconnect && len(resp) > 1:
				t.Errorf("responses to 3: got %d, want at most 1", len(resp))
			case !tt.disconnect && (len(resp) != 1 || stopReason(t, resp[0]) != "cancelled"):
				t.Errorf("responses to 3: got %d, want one cancelled", len(resp))
			}
			if n, _ := promptsToAgent(t, transcript(t, rec)); n != 1 {
				t.Errorf("prompts the agent saw: got %d, want 1", n)
			}
		})
	}
}
