package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// Useful logs: at debug, one line per frame saying where it
// went — direction, kind, method, id, size — and never what it held; at
// info, decision lines carrying pid, agent, session and the client's id,
// with durations in milliseconds.
func TestE2EDebugLogsFrameRouting(t *testing.T) {
	t.Parallel()
	logFile := filepath.Join(t.TempDir(), "acp-guard.log")
	const secret = "tell nobody: sk-ant-api03-LOGNOTHISKEY0123456789"
	p := startBin(t, nil, proxy(t, []string{"--log-file", logFile, "--log-level", "debug", "--log-format", "json",
		"--policy", acptest.RetryPolicy(t, 1, 1)}, "--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp")...)
	p.TrySend(acptest.Initialize(1), acptest.SessionNew(2))
	p.Until("2")
	p.TrySend(acptest.Request(3, "session/prompt", `{"sessionId":"sess-1","prompt":[{"type":"text","text":"`+secret+`"}]}`))
	p.Until("3")
	if _, code := p.Finish(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var frames, decisions int
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue // the agent's own stderr lines
		}
		if strings.Contains(line, "LOGNOTHISKEY") || strings.Contains(line, "tell nobody") {
			t.Errorf("prompt content in the log: %s", line)
		}
		switch m["msg"] {
		case "frame":
			frames++
			if m["dir"] == nil || m["kind"] == nil || m["bytes"] == nil || m["route"] == nil {
				t.Errorf("frame line without its routing: %s", line)
			}
			if m["method"] == "session/prompt" && m["dir"] == "c2a" && (m["frame_id"] != "3" || m["bytes"] == float64(0)) {
				t.Errorf("the prompt's frame line: %s", line)
			}
		case "failure classified", "recovery transition", "retry sent", "notice sent", "turn settled":
			decisions++
			if m["pid"] != float64(p.Pid()) || m["agent"] != "codex-acp" || m["session"] != "sess-1" || m["id"] != "3" {
				t.Errorf("decision line without pid %d, agent, session and id: %s", p.Pid(), line)
			}
			for k, v := range m {
				if k == "delay" || k == "duration" || k == "idle" {
					t.Errorf("duration %s=%v not in milliseconds: %s", k, v, line)
				}
			}
			if m["msg"] == "notice sent" {
				if ms, ok := m["delay_ms"].(float64); !ok || ms <= 0 || ms > 2000 {
					t.Errorf("notice delay_ms %v, want the retry's delay in ms: %s", m["delay_ms"], line)
				}
			}
		}
	}
	// initialize, session/new, prompt and their answers, the failed answer,
	// the retry's answer: at least eight frames; a classified failure, two
	// transitions, a retry, a notice, the answer.
	if frames < 8 || decisions < 6 {
		t.Errorf("%d frame lines, %d decision lines:\n%s", frames, decisions, data)
	}
	t.Logf("%d frame lines, %d decision lines (pid %s)", frames, decisions, strconv.Itoa(p.Pid()))
}
