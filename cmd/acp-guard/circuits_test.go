package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/circuit"
)

func TestCircuitsCommand(t *testing.T) {
	dir := t.TempDir()
	st, err := circuit.OpenStore("file", circuit.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cc := circuit.New(circuit.Config{Store: st})
	now := time.Now()
	key := circuit.Key{Provider: "@zed-industries/claude-agent-acp", Model: "opus/4", Scope: "provider"}
	if _, err := cc.Fail(context.Background(), key, circuit.Failure{Class: "transient", Code: "provider_overloaded", CooldownUntil: now.Add(time.Hour)}, "h/1/s/2", now); err != nil {
		t.Fatal(err)
	}
	st.Close()

	code, out, errOut := runPolicyCLI(t, "", "circuits", "--state-dir", dir, "--circuits", "file")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || errOut != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "KEY") ||
		!strings.Contains(lines[1], "default/@zed-industries/claude-agent-acp/opus/4/provider  open") ||
		!strings.Contains(lines[1], "provider_overloaded") {
		t.Fatalf("circuits: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	code, out, _ = runPolicyCLI(t, "", "circuits", "--state-dir", dir, "--json")
	if code != 0 || !strings.Contains(out, `"openUntil"`) || strings.Count(out, "\n") != 1 {
		t.Errorf("circuits --json: exit %d, stdout %s", code, out)
	}
	code, out, _ = runPolicyCLI(t, "", "circuits", "--state-dir", dir, "--clear", "default/@zed-industries/claude-agent-acp/opus/4/provider")
	if code != 0 || !strings.HasPrefix(out, "cleared ") {
		t.Fatalf("circuits --clear: exit %d, stdout %s", code, out)
	}
	if _, out, _ = runPolicyCLI(t, "", "circuits", "--state-dir", dir); strings.Count(out, "\n") != 1 {
		t.Errorf("after --clear: %s, want the header only", out)
	}
	if code, _, errOut = runPolicyCLI(t, "", "circuits", "--state-dir", dir, "--clear", "nope"); code == 0 || !strings.Contains(errOut, "no circuit") {
		t.Errorf("clearing an unknown key: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut = runPolicyCLI(t, "", "circuits", "--circuits", "http://x"); code != 2 || !strings.Contains(errOut, "want off, file") {
		t.Errorf("a bad store: exit %d, stderr %q", code, errOut)
	}
}
