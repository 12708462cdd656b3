package guard_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/replay"
)

// compactPolicyFile writes a policy that stops transient and hard failures
// and, when compact, recovers a context overflow by compaction.
func compactPolicyFile(t *testing.T, compact bool) string {
	t.Helper()
	req := `,"request":{"compact_then_retry":true}`
	if !compact {
		req = ""
	}
	return acptest.WriteFile(t, "policy.json", `{"version":1,
"transient":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}`+req+`}`)
}

// guardPromptTexts returns the text of every session/prompt acp-guard
// itself sent to the agent, in order.
func guardPromptTexts(t *testing.T, evs []replay.Event) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		if e.Dir != replay.DirC2A || e.Via != replay.ViaGuard || !e.IsJSON() {
			continue
		}
		var m struct {
			Method string `json:"method"`
			Params struct {
				Prompt []struct {
					Text string `json:"text"`
				} `json:"prompt"`
			} `json:"params"`
		}
		if json.Unmarshal(e.Msg, &m) == nil && m.Method == "session/prompt" {
			var s strings.Builder
			for _, b := range m.Params.Prompt {
				s.WriteString(b.Text)
			}
			out = append(out, s.String())
		}
	}
	return out
}

// compactionMarked returns the text of the updates marked as the
// compaction turn's, and whether any other update carried the mark.
func compactionMarked(t *testing.T, frames []acptest.Frame) (marked []string) {
	t.Helper()
	for _, f := range frames {
		if f.Method != "session/update" {
			continue
		}
		var p struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
				Content       struct {
					Text string `json:"text"`
				} `json:"content"`
				Meta struct {
					AcpGuard struct {
						Compaction bool `json:"compaction"`
					} `json:"acpGuard"`
				} `json:"_meta"`
			} `json:"update"`
		}
		if err := json.Unmarshal(f.Params, &p); err != nil {
			t.Fatalf("session/update params %s: %v", f.Params, err)
		}
		if p.Update.Meta.AcpGuard.Compaction {
			marked = append(marked, p.Update.SessionUpdate+":"+p.Update.Content.Text)
		}
	}
	return marked
}

// A replay-safe context overflow on an agent that advertises compaction:
// one notice, the command as acp-guard's own prompt, its updates marked,
// one retry, one answer marked compacted.
func TestE2ECompactThenRetry(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ scenario, command string }{
		{"compact", "/compact"},
		{"compact-compress", "/compress"},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			r := runRecovery(t, []string{"--policy", compactPolicyFile(t, true)}, "--scenario", tt.scenario)
			resp := acptest.ResponsesTo(r.frames, "3")
			if len(resp) != 1 || stopReason(t, resp[0]) != "end_turn" {
				t.Fatalf("responses to 3: got %d ending in %s, want one end_turn", len(resp), r.answer().Raw)
			}
			var res struct {
				Meta struct {
					AcpGuard struct {
						Compacted bool `json:"compacted"`
						Attempts  int  `json:"attempts"`
					} `json:"acpGuard"`
				} `json:"_meta"`
			}
			if err := json.Unmarshal(resp[0].Result, &res); err != nil || !res.Meta.AcpGuard.Compacted || res.Meta.AcpGuard.Attempts != 2 {
				t.Errorf("result _meta: got %s, want acpGuard.compacted true, attempts 2", resp[0].Result)
			}
			if r.prompts != 3 || r.viaPxy != 2 {
				t.Errorf("prompts the agent saw: got %d (%d via guard), want 3 (2 via guard: the command, the retry)", r.prompts, r.viaPxy)
			}
			notices := retryNotices(t, r.frames)
			if len(notices) != 1 {
				t.Fatalf("notices: got %d, want 1", len(notices))
			}
			n := notices[0]
			if rm := n.Meta.AcpGuard.Retry; rm.Action != "compact" || rm.Code != "context_overflow" || rm.Class != "request" || rm.Attempt != 1 || rm.MaxRetries != 1 ||
				n.Content.Text != "context window exceeded — compacting the conversation, then retrying (1/1)\n" {
				t.Errorf("notice: got %q %+v", n.Content.Text, *rm)
			}
			marked := compactionMarked(t, r.frames)
			if len(marked) != 1 || marked[0] != "agent_message_chunk:Summarized the conversation to free context." {
				t.Errorf("updates marked compaction: got %q, want the compaction turn's one message chunk", marked)
			}
			evs := transcript(t, filepath.Join(filepath.Dir(r.stateDir), "session.jsonl"))
			if got := guardPromptTexts(t, evs); len(got) != 2 || got[0] != tt.command || got[1] != "hi" {
				t.Errorf("acp-guard's prompts: got %q, want [%q \"hi\"]", got, tt.command)
			}
			recs := attemptRecords(t, r.stateDir)
			if len(recs) != 2 || recs[0].Decision.Action != policy.ActionCompact || recs[0].Outcome != policy.AttemptScheduled ||
				recs[0].Code != "context_overflow" || recs[1].Outcome != policy.AttemptSucceeded {
				t.Errorf("attempt log: got %+v, want compact scheduled, then succeeded", recs)
			}
		})
	}
}

func attemptRecords(t *testing.T, stateDir string) []policy.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(stateDir, policy.LogFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []policy.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r policy.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("attempt log line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// Every way compaction can fail ends in one ProviderError for the
// overflow that says which; activity that is not the compaction's own
// stops at once (fail closed).
func TestE2ECompactionStops(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		scenario, action, reason string
		compact                  bool // the policy allows compaction
		prompts                  int  // session/prompts the agent saw
		notices                  int
	}{
		{"compact", "stop", "request_class", false, 1, 0},
		{"compact-none", "compact", "no_compaction_command", true, 1, 0},
		{"compact-fail", "compact", "compaction_failed", true, 2, 1},
		{"compact-empty", "compact", "compaction_empty", true, 2, 1},
		{"compact-tool", "compact", "compaction_failed", true, 2, 1},
		{"compact-again", "compact", "overflow_after_compaction", true, 3, 1},
		{"compact-effect", "stop", "late_activity", true, 2, 1},
		{"compact-late", "stop", "late_activity", true, 1, 0},
		{"compact-crash", "stop", "agent_exited", true, 2, 1},
		{"compact-after-text", "stop", "unsafe", true, 1, 0},
	} {
		t.Run(tt.scenario+"/"+tt.reason, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rec := filepath.Join(dir, "session.jsonl")
			p := startProxy(t, []string{"--record", rec, "--state-dir", filepath.Join(dir, "state"), "--policy", compactPolicyFile(t, tt.compact)},
				"--scenario", tt.scenario)
			_, sid := p.Open()
			p.Send(acptest.Prompt(3, sid))
			frames := p.Until("3")
			rest, _ := p.Finish()
			resp := acptest.ResponsesTo(append(frames, rest...), "3")
			if len(resp) != 1 || resp[0].Error == nil {
				t.Fatalf("responses to 3: got %d, want one error (%s)", len(resp), frames[len(frames)-1].Raw)
			}
			pe, _ := errorData(t, resp[0])
			wantCode := "context_overflow" // an agent that dies during compaction: the failure recovery was for
			if pe.Code != wantCode || pe.Recovery.Action != tt.action || pe.Recovery.Reason != tt.reason {
				t.Errorf("providerError: got %s/%s recovery %+v, want %s %s %s", pe.Code, pe.Class, pe.Recovery, wantCode, tt.action, tt.reason)
			}
			if n, _ := promptsToAgent(t, transcript(t, rec)); n != tt.prompts {
				t.Errorf("prompts the agent saw: got %d, want %d", n, tt.prompts)
			}
			if n := len(retryNotices(t, frames)); n != tt.notices {
				t.Errorf("notices: got %d, want %d", n, tt.notices)
			}
		})
	}
}

// A cancel during the compaction turn answers cancelled at once and
// nothing is re-sent; the session works afterwards.
func TestE2ECancelDuringCompaction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "session.jsonl")
	p := startProxy(t, []string{"--record", rec, "--state-dir", filepath.Join(dir, "state"), "--policy", compactPolicyFile(t, true)},
		"--scenario", "compact-hang")
	_, sid := p.Open()
	p.Send(acptest.Prompt(3, sid))
	var frames []acptest.Frame
	for len(compactionMarked(t, frames)) == 0 { // the compaction turn is running
		frames = append(frames, p.Next())
	}
	p.Send(acptest.Cancel(sid))
	frames = append(frames, p.Until("3")...)
	resp := acptest.ResponsesTo(frames, "3")
	if len(resp) != 1 || stopReason(t, resp[0]) != "cancelled" {
		t.Fatalf("responses to 3: got %d, last %s; want one cancelled", len(resp), frames[len(frames)-1].Raw)
	}
	p.Send(acptest.Prompt(4, sid))
	next := p.Until("4")
	if r := acptest.ResponsesTo(next, "4"); len(r) != 1 || stopReason(t, r[0]) != "end_turn" {
		t.Errorf("the next prompt: got %s, want end_turn (the session was compacted)", next[len(next)-1].Raw)
	}
	rest, _ := p.Finish()
	if n := len(acptest.ResponsesTo(append(next, rest...), "3")); n != 0 {
		t.Errorf("prompt 3 answered %d more times", n)
	}
	if got := guardPromptTexts(t, transcript(t, rec)); len(got) != 1 || got[0] != "/compact" {
		t.Errorf("acp-guard's prompts: got %q, want only /compact (no retry after the cancel)", got)
	}
	recs := attemptRecords(t, filepath.Join(dir, "state"))
	if len(recs) != 2 || recs[1].Outcome != policy.AttemptCancelled {
		t.Errorf("attempt log: got %+v, want compact scheduled, then cancelled", recs)
	}
}

// The attempt record of the compaction cannot be written: nothing is sent.
func TestE2ECompactionUnwritableLog(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "session.jsonl")
	state := t.TempDir() // its attempt log's name is taken by a directory
	if err := os.Mkdir(filepath.Join(state, "attempts.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, []string{"--record", rec, "--state-dir", state, "--policy", compactPolicyFile(t, true)}, "--scenario", "compact")
	_, sid := p.Open()
	p.Send(acptest.Prompt(3, sid))
	frames := p.Until("3")
	p.Finish()
	pe, _ := errorData(t, frames[len(frames)-1])
	if pe.Code != "context_overflow" || pe.Recovery.Reason != "state_unwritable" {
		t.Errorf("providerError: got %s recovery %+v, want context_overflow stopped with state_unwritable", pe.Code, pe.Recovery)
	}
	if n, _ := promptsToAgent(t, transcript(t, rec)); n != 1 {
		t.Errorf("prompts the agent saw: got %d, want 1 (no compaction without its record)", n)
	}
}

// A stop signal during the compaction turn answers the held prompt at once
// with the overflow, reason shutting_down; nothing is re-sent.
func TestE2ESignalDuringCompaction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "session.jsonl")
	p := startProxy(t, []string{"--record", rec, "--state-dir", filepath.Join(dir, "state"), "--policy", compactPolicyFile(t, true)},
		"--scenario", "compact-hang")
	_, sid := p.Open()
	p.Send(acptest.Prompt(3, sid))
	var frames []acptest.Frame
	for len(compactionMarked(t, frames)) == 0 {
		frames = append(frames, p.Next())
	}
	if err := platform.Kill(p.Pid(), platform.SIGTERM); err != nil {
		t.Fatal(err)
	}
	frames = append(frames, p.Until("3")...)
	rest, _ := p.Finish()
	resp := acptest.ResponsesTo(append(frames, rest...), "3")
	if len(resp) != 1 || resp[0].Error == nil {
		t.Fatalf("responses to 3: got %d, want one error (%s)", len(resp), frames[len(frames)-1].Raw)
	}
	pe, _ := errorData(t, resp[0])
	if pe.Code != "context_overflow" || pe.Recovery.Action != "stop" || pe.Recovery.Reason != "shutting_down" {
		t.Errorf("providerError: got %s recovery %+v, want context_overflow stopped with shutting_down", pe.Code, pe.Recovery)
	}
	if got := guardPromptTexts(t, transcript(t, rec)); len(got) != 1 || got[0] != "/compact" {
		t.Errorf("acp-guard's prompts: got %q, want only /compact", got)
	}
}
