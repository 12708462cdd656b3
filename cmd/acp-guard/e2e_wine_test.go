package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// TestE2EWindowsUnderWine runs the Windows build for real: acp-guard.exe
// guarding its own demo agent (acp-guard.exe demo-agent) under Wine, over
// real pipes — initialize, a transient failure that the policy's retry
// recovers, a clean close with exit 0. make test-windows
// (scripts/wine-test.sh) builds the .exe and names it and the Wine
// wrapper; without them the test skips.
func TestE2EWindowsUnderWine(t *testing.T) {
	exe, wine := os.Getenv("WINE_TEST_EXE"), os.Getenv("WINE_TEST_WRAPPER")
	if exe == "" || wine == "" {
		t.Skip("make test-windows runs it: WINE_TEST_EXE and WINE_TEST_WRAPPER name the Windows build and the Wine wrapper")
	}
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(pol, []byte(`{"transient":{"retry":{"max_retries":2,"initial_interval_seconds":1}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	argv := []string{wine, exe, "--policy", winPath(pol), "--state-dir", winPath(state), "--log-level", "info",
		"--", winPath(exe), "demo-agent", "--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"}
	// Wine's first start in a prefix is slow; the watchdog bounds a hang.
	p := acptest.Start(t, argv, acptest.Options{Watchdog: 3 * time.Minute})
	p.TrySend(acptest.Initialize(1))
	if init := p.Until("1"); init[len(init)-1].Error != nil {
		t.Fatalf("initialize answered %s", init[len(init)-1].Raw)
	}
	p.TrySend(acptest.SessionNew(2))
	p.Until("2")
	p.TrySend(acptest.Prompt(3, "sess-1"))
	frames := p.Until("3")
	if last := frames[len(frames)-1]; last.Error != nil || !strings.Contains(string(last.Result), "end_turn") {
		t.Errorf("prompt answered %s, want the retried end_turn", last.Raw)
	}
	_, code := p.Finish()
	stderr := p.Stderr.Tail(20000)
	if code != 0 {
		t.Errorf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "retry") {
		t.Errorf("no retry in the log; stderr:\n%s", stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(state, "*"))
	if len(logs) == 0 {
		t.Errorf("nothing written to the state folder %s (the attempt log)", state)
	}
	t.Logf("exit %d; state folder %v; the session's log:\n%s", code, logs, stderr)
}

// winPath is how a Windows program under Wine names a file of the host
// (drive Z: is the root).
func winPath(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }
