package guard_test

import (
	"bytes"
	"strings"
	"testing"

	acpguard "github.com/acp-guard/acp-guard"
)

// Text-reported failures and retry notes through the built binary, from a
// demo agent the catalogue has never heard of ("demo-agent").

func TestE2EErrorLineTurn(t *testing.T) {
	t.Parallel()
	t.Run("projected", func(t *testing.T) {
		t.Parallel()
		frames := promptTurn(t, startProxy(t, nil, "--scenario", "error-line"))
		resp := responsesTo(frames, "3")
		if len(resp) != 1 {
			t.Fatalf("responses to 3: %d, want 1", len(resp))
		}
		pe, _ := errorData(t, resp[0])
		if pe.Code != "provider_unavailable" || pe.Class != "transient" || !pe.ReplaySafe || pe.Evidence.AssistantOutput || pe.ProviderID != "demo-agent" {
			t.Errorf("providerError: %+v", pe)
		}
		if u, ok := frames[len(frames)-2].update(t); !ok || u.Content.Text != "Error: 503 Service Unavailable" {
			t.Errorf("the error line must reach the client as it came: %s", frames[len(frames)-2].raw)
		}
	})
	t.Run("retried by the policy, the agent failing each time", func(t *testing.T) {
		t.Parallel()
		r := runRecovery(t, []string{"--policy", retryPolicyFile(t, 1, 1), "--jitter-seed", "7"}, "--scenario", "error-line")
		pe, _ := errorData(t, r.answer())
		if r.prompts != 2 || r.viaPxy != 1 || pe.Recovery.Reason != "exhausted" || pe.Recovery.Attempt != 1 {
			t.Errorf("prompts %d (%d by the guard), recovery %+v: want 2 (1), exhausted after 1 retry", r.prompts, r.viaPxy, pe.Recovery)
		}
	})
	t.Run("after a thought and a tool call: not replay-safe", func(t *testing.T) {
		t.Parallel()
		r := runRecovery(t, []string{"--policy", retryPolicyFile(t, 3, 1)}, "--scenario", "error-line-after-tool")
		pe, _ := errorData(t, r.answer())
		if pe.Code != "provider_unavailable" || pe.ReplaySafe || pe.Recovery.Reason != "unsafe" || r.prompts != 1 {
			t.Errorf("providerError %+v, prompts %d: want unsafe, never retried", pe, r.prompts)
		}
	})
	t.Run("prose that starts like an error line passes byte for byte", func(t *testing.T) {
		t.Parallel()
		frames := promptTurn(t, startProxy(t, nil, "--scenario", "error-line-prose"))
		resp := responsesTo(frames, "3")
		if len(resp) != 1 || stopReason(t, resp[0]) != "end_turn" {
			t.Fatalf("responses to 3: %s", resp[0].raw)
		}
		if direct := directTurn(t, "--scenario", "error-line-prose"); !bytes.Equal(turnBytes(frames[len(frames)-2:]), lastTwo(t, direct)) {
			t.Errorf("the prose turn changed:\n got %s\nwant %s", turnBytes(frames[len(frames)-2:]), lastTwo(t, direct))
		}
	})
}

// lastTwo returns the last two frames of a turn's bytes.
func lastTwo(t *testing.T, b []byte) []byte {
	t.Helper()
	lines := bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if len(lines) < 2 {
		t.Fatalf("turn of %d frames", len(lines))
	}
	return append(append([]byte(nil), lines[len(lines)-2]...), append(lines[len(lines)-1], '\n')...)
}

func TestE2ERetryNotesOnly(t *testing.T) {
	t.Parallel()
	t.Run("the notes name a failure", func(t *testing.T) {
		t.Parallel()
		r := runRecovery(t, []string{"--policy", retryPolicyFile(t, 3, 1)}, "--scenario", "retry-notes")
		pe, _ := errorData(t, r.answer())
		if pe.Recovery.Reason != "diagnostic_only" || !pe.ReplaySafe || r.prompts != 1 {
			t.Errorf("providerError %+v, prompts %d: want a failure never recovered (diagnostic_only)", pe, r.prompts)
		}
		if n := len(retryNotices(t, r.frames)); n != 0 {
			t.Errorf("%d retry notices", n)
		}
		var notes int
		for _, f := range r.frames {
			if u, ok := f.update(t); ok && strings.Contains(u.Content.Text, "Retrying in") {
				notes++
			}
		}
		if notes != 2 {
			t.Errorf("the client saw %d of the agent's notes, want 2", notes)
		}
	})
	t.Run("the notes name nothing known", func(t *testing.T) {
		t.Parallel()
		frames := promptTurn(t, startProxy(t, nil, "--scenario", "retry-notes-unnamed"))
		resp := responsesTo(frames, "3")
		m, ok := resultMeta(t, resp[0])
		if !ok || m.Silent == nil || m.Silent.Kind != "empty" || !bytes.Contains(m.Silent.Evidence["empty"], []byte(`"retryNotes":1`)) {
			t.Errorf("result %s: want silent empty with retryNotes 1", resp[0].raw)
		}
	})
}

// Seed 004: a transient note followed by a 401 is not retried, whatever
// the policy says.
func TestE2ETransientNoteThen401(t *testing.T) {
	t.Parallel()
	everything := writeFile(t, "policy.json", `{"transient":{"retry":{"max_retries":3,"initial_interval_seconds":1}},"hard":{"retry":{"max_retries":3,"initial_interval_seconds":1}}}`)
	r := runRecovery(t, []string{"--policy", everything}, "--scenario", "note-then-401")
	pe, _ := errorData(t, r.answer())
	if pe.Code != "auth_required" || pe.Recovery.Action != "stop" || pe.Recovery.Reason != "diagnostic_mismatch" || r.prompts != 1 {
		t.Errorf("providerError %+v, prompts %d: want auth_required stopped (diagnostic_mismatch), never retried", pe, r.prompts)
	}
}

// Text after end_turn and before the next prompt: forwarded, reported as
// late output (the log, replay --json), never part of the next turn.
func TestE2ELateOutput(t *testing.T) {
	t.Parallel()
	rec := t.TempDir() + "/t.jsonl"
	p := startProxy(t, []string{"--record", rec}, "--scenario", "late-output")
	_, sid := p.open()
	p.send(e2ePrompt(3, sid))
	if resp := p.until("3"); stopReason(t, resp[len(resp)-1]) != "end_turn" {
		t.Fatalf("prompt 3: %s", resp[len(resp)-1].raw)
	}
	for _, want := range []string{"Hello! How can ", "I help you today?"} {
		if u, ok := p.next().update(t); !ok || u.Content.Text != want {
			t.Fatalf("late chunk: got %+v, want %q", u, want)
		}
	}
	p.send(e2ePrompt(4, sid)) // the late answer's window closes here
	p.until("4")
	p.finish()
	if !strings.Contains(p.stderr.String(), "late output") {
		t.Errorf("no late output in the log:\n%s", p.stderr.String())
	}
	res, err := acpguard.Replay(transcript(t, rec), acpguard.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Turns) != 2 {
		t.Fatalf("replayed %d turns, want 2", len(res.Turns))
	}
	if first := res.Turns[0]; first.LateOutput != 2 || first.Silent != "empty" {
		t.Errorf("prompt 3: %+v, want silent empty with lateOutput 2", first)
	}
	if second := res.Turns[1]; second.Silent != "empty" {
		t.Errorf("prompt 4 counted the earlier answer: %+v", second)
	}
}
