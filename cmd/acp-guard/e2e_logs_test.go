package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// With --log-file, everything acp-guard writes besides the protocol goes
// there — the agent's own stderr too — and an agent crash is a warning at
// the default level.
func TestE2ELogFileGetsAgentStderrAndCrash(t *testing.T) {
	t.Parallel()
	logFile := filepath.Join(t.TempDir(), "acp-guard.log")
	p := startBin(t, nil, proxy(t, []string{"--log-file", logFile}, "--scenario", "crash", "--exit-code", "3")...)
	p.TrySend(acptest.Initialize(1), acptest.SessionNew(2))
	p.Until("2")
	p.TrySend(acptest.Prompt(3, "sess-1"))
	p.Until("3")
	if _, code := p.Finish(); code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	logs := string(data)
	for _, want := range []string{"demo-agent: fatal: simulated crash in prompt 1", "level=WARN", "agent exited with a failure", "code=3"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log file lacks %q:\n%s", want, logs)
		}
	}
	if got := p.Stderr.String(); got != "" {
		t.Errorf("stderr %q, want nothing (all of it in the log file)", got)
	}
}

// The agent's stderr is stored redacted in the log file.
func TestE2ELogFileRedactsAgentStderr(t *testing.T) {
	t.Parallel()
	logFile := filepath.Join(t.TempDir(), "acp-guard.log")
	_, stderr, code := runBin(t, nil, "", "--log-file", logFile, "--",
		"sh", "-c", `echo "401 for ops.lead@example.com with ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789" >&2; cat`)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	data, _ := os.ReadFile(logFile)
	logs := string(data)
	if !strings.Contains(logs, "401 for [redacted-email] with [redacted-key]") || strings.Contains(logs, "ops.lead") || strings.Contains(logs, "ghp_") {
		t.Errorf("log file:\n%s\nwant the agent's line, redacted", logs)
	}
}
