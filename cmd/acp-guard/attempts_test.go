package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/policy"
)

func TestAttemptsCommand(t *testing.T) {
	dir := t.TempDir()
	l, err := policy.OpenLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 9, 15, 12, 0, 0, 0, time.UTC)
	doc := policy.Default()
	doc.Transient = policy.ClassPolicy{Retry: policy.Retry{Enabled: true, MaxRetries: 3, InitialIntervalSeconds: 5}, OnExhausted: policy.OutcomeSkip}
	d, _ := policy.Evaluate(doc, policy.Failure{Class: "transient", Safe: true, Now: t0}, policy.Route{})
	for _, r := range []policy.Record{
		{Time: t0, SessionID: "sess-1", RequestID: "7", Generation: 2, Attempt: 0, Code: "provider_overloaded",
			Class: "transient", Decision: d, Policy: doc, Outcome: policy.AttemptScheduled},
		{Time: t0.Add(time.Second), SessionID: "sess 2\x1b[31m", RequestID: `"x"`, Generation: 1, Code: "unclassified",
			Class: "unclassified", Decision: policy.Decision{Action: policy.ActionStop, Reason: "unclassified"}, Policy: doc, Outcome: policy.AttemptStopped},
		{Time: t0.Add(5 * time.Second), SessionID: "sess-1", RequestID: "7", Generation: 2, Attempt: 1,
			Decision: policy.Decision{Action: policy.ActionRetry}, Policy: doc, Outcome: policy.AttemptSucceeded},
	} {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()

	const header = "TIME                      SESSION           REQUEST  GEN  ATTEMPT        CLASS         CODE                 ACTION  DELAY  DEADLINE                  REASON        OUTCOME\n"
	row1 := "2026-09-15T12:00:00.000Z  sess-1            7        2    0 (retry 1/3)  transient     provider_overloaded  retry   5s     2026-09-15T12:00:05.000Z  retry         scheduled\n"
	row2 := "2026-09-15T12:00:01.000Z  \"sess 2\\x1b[31m\"  \"x\"      1    0              unclassified  unclassified         stop    -      -                         unclassified  stopped\n"
	row3 := "2026-09-15T12:00:05.000Z  sess-1            7        2    1              -             -                    retry   -      -                         -             succeeded\n"

	t.Run("table", func(t *testing.T) {
		code, out, errOut := runPolicyCLI(t, "", "attempts", "--state-dir", dir)
		if code != 0 || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		if want := header + row1 + row2 + row3; out != want {
			t.Errorf("table:\ngot\n%s\nwant\n%s", out, want)
		}
	})
	t.Run("one session", func(t *testing.T) {
		_, out, _ := runPolicyCLI(t, "", "attempts", "--state-dir", dir, "--session", "sess-1")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 3 || !strings.Contains(lines[1], "scheduled") || !strings.Contains(lines[2], "succeeded") {
			t.Errorf("table for sess-1: got\n%s\nwant the header and two rows", out)
		}
	})
	t.Run("json", func(t *testing.T) {
		_, out, _ := runPolicyCLI(t, "", "attempts", "--state-dir", dir, "--json", "--session", "sess-1")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("json: got %d lines, want 2:\n%s", len(lines), out)
		}
		var rec policy.Record
		if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Decision.DelayMs != 5000 || rec.Policy.Transient.Retry.MaxRetries != 3 || rec.RequestID != "7" {
			t.Errorf("json record: got %+v", rec)
		}
	})
	t.Run("no log yet", func(t *testing.T) {
		empty := t.TempDir()
		code, out, errOut := runPolicyCLI(t, "", "attempts", "--state-dir", empty)
		want := "acp-guard: no attempts recorded (" + filepath.Join(empty, policy.LogFileName) + " does not exist)\n"
		if code != 0 || out != "" || errOut != want {
			t.Errorf("got %d %q %q, want 0, no output, %q", code, out, errOut, want)
		}
	})
	t.Run("corrupt log", func(t *testing.T) {
		bad := t.TempDir()
		if err := os.WriteFile(filepath.Join(bad, policy.LogFileName), []byte("{oops\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runPolicyCLI(t, "", "attempts", "--state-dir", bad)
		if code != 0 || !strings.Contains(errOut, "skipped line 1") {
			t.Errorf("got %d %q, want exit 0 and line 1 named as skipped", code, errOut)
		}
	})
	t.Run("default state dir", func(t *testing.T) {
		state := t.TempDir()
		t.Setenv("XDG_STATE_HOME", state)
		_, _, errOut := runPolicyCLI(t, "", "attempts")
		if want := filepath.Join(state, "acp-guard", policy.LogFileName); !strings.Contains(errOut, want) {
			t.Errorf("stderr %q, want it to name %s", errOut, want)
		}
	})
}
