package acpschema_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acpschema"
	"github.com/acp-guard/acp-guard/internal/testbin"
	"github.com/acp-guard/acp-guard/replay"
)

// counts are how many frames of acp-guard's own a run produced: a
// scenario states the least it expects, so that a run in which the guard
// wrote nothing cannot pass unnoticed.
type counts struct{ toClient, toAgent int }

// conform validates every frame the client read and every frame the guard
// wrote in either direction (from the recording) against the schema.
func conform(t *testing.T, s *session, want counts) {
	t.Helper()
	v := schemaOrSkip(t)
	evs := readRecording(t, s.rec)
	agentReqs, clientReqs := map[string]string{}, map[string]string{}
	origRaw := map[string]bool{}
	for _, e := range evs {
		var f frame
		if e.IsJSON() && json.Unmarshal(e.Msg, &f) == nil && f.Method != "" && f.ID != nil {
			if e.Dir == replay.DirA2C {
				agentReqs[string(f.ID)] = f.Method
			} else if e.Dir == replay.DirC2A {
				clientReqs[string(f.ID)] = f.Method
			}
		}
		if e.Dir == replay.DirA2C && e.Original() {
			origRaw[string(e.Bytes())] = true
		}
	}
	for id, m := range s.sent {
		clientReqs[id] = m
	}
	var got counts
	for _, e := range evs {
		if e.Original() || (e.Dir != replay.DirA2C && e.Dir != replay.DirC2A) {
			continue
		}
		side, methods, where := acpschema.Agent, clientReqs, "guard → client"
		if e.Dir == replay.DirC2A {
			side, methods, where = acpschema.Client, agentReqs, "guard → agent"
			got.toAgent++
		} else {
			got.toClient++
		}
		validate(t, v, side, where, e.Bytes(), methods)
	}
	for _, line := range s.lines {
		line = trimEOL(line)
		if !json.Valid(line) {
			if !origRaw[string(line)] {
				t.Errorf("client read a line that is not JSON and not the agent's own: %q", clip(line))
			}
			continue
		}
		validate(t, v, acpschema.Agent, "client read", line, clientReqs)
	}
	if got.toClient < want.toClient || got.toAgent < want.toAgent {
		t.Errorf("frames acp-guard wrote: got %d to the client, %d to the agent; want at least %d and %d (the scenario did not exercise the guard)",
			got.toClient, got.toAgent, want.toClient, want.toAgent)
	}
	t.Logf("validated %d client lines and %d+%d guard frames", len(s.lines), got.toClient, got.toAgent)
}

func validate(t *testing.T, v *acpschema.Validator, side acpschema.Side, where string, line []byte, methods map[string]string) {
	t.Helper()
	var f frame
	_ = json.Unmarshal(line, &f)
	method := f.Method
	if method == "" {
		method = methods[string(f.ID)]
	}
	def, err := v.Validate(side, line, method)
	if err != nil {
		t.Errorf("%s: invalid ACP (%s): %v\nframe: %s", where, method, err, clip(line))
		return
	}
	if def == "" && f.Method != "" {
		t.Logf("%s: no schema definition for %s; checked the JSON-RPC envelope only", where, f.Method)
	}
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// policyFile is a policy document: transient retries (max, initial
// seconds), an optional reset wait, then on_exhausted.
func policyFile(t *testing.T, max, initial int, wait bool, exhausted string) string {
	w := `"wait_for_reset":{"enabled":false,"max_wait_seconds":0}`
	if wait {
		w = `"wait_for_reset":{"enabled":true,"max_wait_seconds":300}`
	}
	retry := fmt.Sprintf(`"retry":{"enabled":%t,"max_retries":%d,"initial_interval_seconds":%d}`, max > 0, max, initial)
	if max == 0 {
		retry = `"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0}`
	}
	return writeFile(t, "policy.json", fmt.Sprintf(`{"version":1,
"transient":{%s,%s,"on_exhausted":%q},
"hard":{%s,%s,"on_exhausted":%q}}`, retry, w, exhausted, retry, w, exhausted))
}

// onePrompt opens a session, sends one prompt and reads to its answer,
// then closes stdin and reads to the end.
func onePrompt(t *testing.T, flags []string, agent ...string) *session {
	t.Helper()
	s := proxy(t, flags, agent...)
	sid := s.open()
	s.prompt(3, sid)
	s.until(answerTo("3"))
	s.finish()
	return s
}

func TestSchemaPromptFailures(t *testing.T) {
	t.Parallel()
	schemaOrSkip(t)
	retry := policyFile(t, 2, 1, false, "stop")
	for _, tt := range []struct {
		name  string
		flags []string
		agent []string
		want  counts
	}{
		{"cursor rewrite", nil, []string{"--scenario", "cursor-retriable"}, counts{1, 0}},
		{"cursor incident", nil, []string{"--scenario", "cursor-incident"}, counts{1, 0}},
		{"codex annotate", nil, []string{"--scenario", "codex-error"}, counts{1, 0}},
		{"claude annotate", nil, []string{"--scenario", "claude-error"}, counts{1, 0}},
		{"gemini annotate", nil, []string{"--scenario", "gemini-error"}, counts{1, 0}},
		{"quota annotate", nil, []string{"--scenario", "quota-reset"}, counts{1, 0}},
		{"auth annotate", nil, []string{"--scenario", "auth-error"}, counts{1, 0}},
		{"overflow annotate", nil, []string{"--scenario", "context-overflow"}, counts{1, 0}},
		{"unknown annotate", nil, []string{"--scenario", "unknown-error"}, counts{1, 0}},
		{"text then fail", []string{"--policy", retry}, []string{"--scenario", "text-then-fail"}, counts{1, 0}},
		{"retry thought notices", []string{"--policy", retry}, []string{"--scenario", "fail-then-succeed", "--fail", "2", "--agent-name", "codex-acp"}, counts{2, 2}},
		{"retry message notices", []string{"--policy", retry, "--notices", "message"}, []string{"--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"}, counts{1, 1}},
		{"retries exhausted", []string{"--policy", retry}, []string{"--scenario", "fail-then-succeed", "--fail", "5", "--agent-name", "codex-acp"}, counts{3, 2}},
		{"wait for reset", []string{"--policy", policyFile(t, 1, 1, true, "stop")}, []string{"--scenario", "quota-reset", "--reset-in", "1s"}, counts{1, 0}},
		{"fallback set_model", []string{"--fallback-models", "model-b"}, []string{"--scenario", "fail-model", "--agent-name", "@zed-industries/claude-agent-acp"}, counts{0, 2}},
		{"fallback exhausted", []string{"--fallback-models", "model-b"}, []string{"--scenario", "fail-then-succeed", "--fail", "5", "--agent-name", "@zed-industries/claude-agent-acp"}, counts{1, 2}},
		{"crash", nil, []string{"--scenario", "crash"}, counts{1, 0}},
		{"crash by signal", nil, []string{"--scenario", "crash-signal"}, counts{1, 0}},
		{"agent line too long", []string{"--max-line", "4096"}, []string{"--scenario", "huge-line", "--size", "100000"}, counts{0, 0}},
		{"non-JSON from the agent", nil, []string{"--scenario", "non-json"}, counts{0, 0}},
		{"effects", nil, []string{"--scenario", "tools"}, counts{0, 0}},
		{"agent cannot start", nil, []string{"!", "/nonexistent/acp-agent"}, counts{1, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s *session
			if tt.agent[0] == "!" {
				s = proxy(t, tt.flags, tt.agent...)
				s.send(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
				s.finish()
			} else if tt.name == "effects" {
				s = effects(t)
			} else {
				s = onePrompt(t, tt.flags, tt.agent...)
			}
			conform(t, s, tt.want)
		})
	}
}

// effects answers the agent's requests to the client (tools scenario).
func effects(t *testing.T) *session {
	s := proxy(t, nil, "--scenario", "tools")
	sid := s.open()
	s.prompt(3, sid)
	for {
		f := s.until(func(f frame) bool { return f.Method != "session/update" })
		if f.Method == "" && string(f.ID) == "3" {
			break
		}
		if f.Method == "fs/read_text_file" {
			s.raw(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":"x"}}`+"\n", f.ID))
		}
	}
	s.finish()
	return s
}

// The guard's own answers outside a provider failure: a cancel while a
// retry waits, a reserved request id, an oversize client line, the
// client leaving while a prompt hangs.
func TestSchemaGuardAnswers(t *testing.T) {
	t.Parallel()
	schemaOrSkip(t)
	t.Run("cancel during retry wait", func(t *testing.T) {
		t.Parallel()
		s := proxy(t, []string{"--policy", policyFile(t, 3, 600, false, "stop")}, "--scenario", "fail-then-succeed", "--fail", "5", "--agent-name", "codex-acp")
		sid := s.open()
		s.prompt(3, sid)
		s.until(func(f frame) bool { return bytes.Contains(f.Params, []byte(`"acpGuard"`)) })
		s.send(-1, "session/cancel", fmt.Sprintf(`{"sessionId":%q}`, sid))
		f := s.until(answerTo("3"))
		if !bytes.Contains(f.Result, []byte("cancelled")) {
			t.Fatalf("cancel answered %s", f.raw)
		}
		s.finish()
		conform(t, s, counts{2, 0})
	})
	t.Run("reserved id and oversize line", func(t *testing.T) {
		t.Parallel()
		s := proxy(t, []string{"--max-line", "4096"}, "--scenario", "success")
		s.open()
		s.raw(`{"jsonrpc":"2.0","id":"acp-guard:7","method":"session/list","params":{}}` + "\n")
		s.until(answerTo(`"acp-guard:7"`))
		s.sent["9"] = "session/prompt"
		s.raw(`{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[{"type":"text","text":"` + strings.Repeat("x", 10000) + `"}]}}` + "\n")
		s.until(answerTo("9"))
		s.finish()
		conform(t, s, counts{2, 0})
	})
	t.Run("client leaves a hung prompt", func(t *testing.T) {
		t.Parallel()
		s := proxy(t, []string{"--grace", "200ms"}, "--scenario", "hang", "--ignore-cancel")
		sid := s.open()
		s.prompt(3, sid)
		s.finish()
		conform(t, s, counts{1, 0})
	})
}

// replay --serve plays a recorded session back as the agent, behind a
// guard; everything the client reads must still be valid ACP.
func TestSchemaReplayServe(t *testing.T) {
	t.Parallel()
	schemaOrSkip(t)
	for _, scenario := range []string{"cursor-retriable", "crash", "codex-error"} {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			first := onePrompt(t, nil, "--scenario", scenario)
			s := proxy(t, nil, "!", testbin.Path(t), "replay", "--serve", "--agent-only", "--no-delay", first.rec)
			sid := s.open()
			s.prompt(3, sid)
			s.until(answerTo("3"))
			s.finish()
			conform(t, s, counts{1, 0})
		})
	}
}
