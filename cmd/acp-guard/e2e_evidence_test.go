package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// evidenceVerdict is what a ProviderError says of the evidence.
type evidenceVerdict struct {
	Code         string `json:"code"`
	Class        string `json:"class"`
	Rule         string `json:"rule"`
	Reason       string `json:"reason"`
	SafeExcerpt  string `json:"safeExcerpt"`
	AgentRetries int    `json:"agentRetries"`
	Recovery     struct {
		Reason string `json:"reason"`
	} `json:"recovery"`
}

func liveVerdict(t *testing.T, f acptest.Frame) evidenceVerdict {
	t.Helper()
	var d struct {
		ProviderError *evidenceVerdict `json:"providerError"`
	}
	if f.Error == nil || json.Unmarshal(f.Error.Data, &d) != nil || d.ProviderError == nil {
		t.Fatalf("answer %s: want a JSON-RPC error with a providerError", f.Raw)
	}
	return *d.ProviderError
}

// replayVerdict is the verdict `acp-guard replay --json` gives the
// recorded transcript's only prompt turn.
func replayVerdict(t *testing.T, rec string) evidenceVerdict {
	t.Helper()
	out, stderr, code := runBin(t, nil, "", "replay", "--json", rec)
	var turn struct {
		ProviderError *evidenceVerdict `json:"providerError"`
	}
	if code != 0 || json.Unmarshal([]byte(strings.TrimSpace(out)), &turn) != nil || turn.ProviderError == nil {
		t.Fatalf("replay: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	return *turn.ProviderError
}

// noisy reports whether an excerpt quotes the agent's background noise.
func noisy(excerpt string) bool {
	return strings.Contains(excerpt, "ENOTFOUND") || strings.Contains(excerpt, "telemetry") || strings.Contains(excerpt, "analytics")
}

// During a long failing turn the agent's stderr fills with its telemetry
// and analytics export failures (DNS words for their own hosts); then it
// reports the real failure as a chunk and as -32603 with the text in
// data. The verdict is the one the agent's own error gives, its excerpt
// quotes that error, and the recorded transcript replays to the same
// verdict. A cut answer that the agent visibly restarted counts in
// agentRetries.
func TestE2EChattyStderrDoesNotDecide(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		scenario, code, class, excerpt string
		retries                        int
	}{
		{"chatty-500", "provider_unavailable", "transient", `Error: 500 {"type":"error","error":{"type":"api_error"`, 0},
		{"chatty-429", "rate_limited", "transient", `Error: 429 {"type":"error","error":{"type":"rate_limit_error"`, 0},
		{"chatty-cut", "agent_transport_lost", "transient", "terminated", 1},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			rec := filepath.Join(t.TempDir(), tt.scenario+".jsonl")
			p := startBin(t, nil, proxy(t, []string{"--record", rec, "--state-dir", t.TempDir()},
				"--scenario", tt.scenario, "--agent-name", "blind-agent")...)
			p.TrySend(acptest.Initialize(1), acptest.SessionNew(2))
			p.Until("2")
			p.TrySend(acptest.Prompt(3, "sess-1"))
			f := p.Until("3")
			live := liveVerdict(t, f[len(f)-1])
			p.Finish()
			t.Logf("live %+v", live)
			for view, v := range map[string]evidenceVerdict{"live": live, "replay": replayVerdict(t, rec)} {
				if v.Code != tt.code || v.Class != tt.class {
					t.Errorf("%s: %s/%s (rule %s, excerpt %q), want %s/%s", view, v.Code, v.Class, v.Rule, v.SafeExcerpt, tt.code, tt.class)
				}
				if !strings.Contains(v.SafeExcerpt, tt.excerpt) || noisy(v.SafeExcerpt) {
					t.Errorf("%s: safeExcerpt %q, want the agent's error %q and no stderr noise", view, v.SafeExcerpt, tt.excerpt)
				}
				if v.AgentRetries != tt.retries {
					t.Errorf("%s: agentRetries %d, want %d", view, v.AgentRetries, tt.retries)
				}
			}
			if r := replayVerdict(t, rec); r != live {
				t.Errorf("replay %+v, live %+v: want the same verdict", r, live)
			}
		})
	}
}

// The client closes its input while the agent retries noisily: the exit
// that follows — the agent's own after its stdin's EOF (chatty-close), or
// on acp-guard's grace SIGTERM (chatty-hang) — is the client's doing, not
// a provider failure read from the agent's stderr.
func TestE2EExitAfterClientCloseSaysSo(t *testing.T) {
	t.Parallel()
	for _, scenario := range []string{"chatty-close", "chatty-hang"} {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			rec := filepath.Join(t.TempDir(), scenario+".jsonl")
			p := startBin(t, nil, proxy(t, []string{"--record", rec, "--state-dir", t.TempDir(), "--grace", "200ms"},
				"--scenario", scenario, "--agent-name", "blind-agent")...)
			p.TrySend(acptest.Initialize(1), acptest.SessionNew(2))
			p.Until("2")
			p.TrySend(acptest.Prompt(3, "sess-1"))
			p.CloseStdin()
			f := p.Until("3")
			live := liveVerdict(t, f[len(f)-1])
			p.Wait()
			t.Logf("live %+v", live)
			for view, v := range map[string]evidenceVerdict{"live": live, "replay": replayVerdict(t, rec)} {
				if v.Code != "unclassified" || v.Reason != "client_closed" || v.Recovery.Reason != "client_closed" {
					t.Errorf("%s: code %s reason %q recovery.reason %q (excerpt %q), want unclassified, client_closed, client_closed",
						view, v.Code, v.Reason, v.Recovery.Reason, v.SafeExcerpt)
				}
				if noisy(v.SafeExcerpt) {
					t.Errorf("%s: safeExcerpt %q quotes stderr noise", view, v.SafeExcerpt)
				}
			}
		})
	}
}
