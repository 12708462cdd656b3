package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/policy"
)

// Hints follow the SDKs through the built binary: gemini's 429 with a
// 7 s retryDelay, under a 1 s/2-retry policy (last backoff 2 s) with
// waits off, is retried once 7 s later and succeeds — not stopped
// (hint_beyond_policy). The delay is read from the attempt log's own
// stamps, not from the test's clock.
func TestE2EHintHonoured(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state")
	p := startBin(t, nil, proxy(t, []string{"--policy", acptest.RetryPolicy(t, 2, 1), "--state-dir", state, "--circuits", "off"},
		"--scenario", "fail-then-succeed", "--fail", "1", "--error", "rate-limit", "--agent-name", "gemini-cli")...)
	p.Send(acptest.Initialize(1), acptest.SessionNew(2))
	p.Until("1")
	sid := sessionID(t, p.Until("2"))
	p.Send(acptest.Prompt(3, sid))
	frames := p.Until("3")
	if last := lastFrame(frames); last.Error != nil {
		t.Fatalf("prompt answered %s, want the retry's result", last.Raw)
	}
	if !strings.Contains(string(frames[0].Raw), "as the provider asked") {
		t.Errorf("notice %s: want it to say the provider's hint was honoured", frames[0].Raw)
	}
	p.Finish()
	b, err := os.ReadFile(filepath.Join(state, policy.LogFileName))
	if err != nil {
		t.Fatal(err)
	}
	var recs []policy.Record
	for _, ln := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r policy.Record
		if err := json.Unmarshal([]byte(ln), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 2 || recs[0].Outcome != policy.AttemptScheduled || recs[0].Decision.Reason != policy.ReasonRetryHintHonoured ||
		recs[0].Decision.DelayMs != 7000 || recs[1].Outcome != policy.AttemptSucceeded || recs[1].Attempt != 1 {
		t.Fatalf("attempt log %s: want a retry scheduled after the 7 s hint (retry_hint_honoured), then its success", b)
	}
	if d := recs[1].Time.Sub(recs[0].Time); d < 7*time.Second {
		t.Errorf("retried %v after the failure, want ≥ 7 s", d)
	}
}
