package main

import (
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/platform"
)

// Agents that stay after stdin closes (as codex-acp and claude-agent-acp
// do) end a clean session: acp-guard's grace signal is not a failure.
func TestE2ECleanSessionWithLingeringAgentExits0(t *testing.T) {
	t.Parallel()
	for _, scenario := range []string{"hang", "ignore-term"} {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			p := startBin(t, nil, proxy(t, []string{"--grace", "200ms", "--log-level", "info"}, "--scenario", scenario)...)
			p.TrySend(acptest.Initialize(1))
			p.Until("1")
			if _, code := p.Finish(); code != 0 {
				t.Errorf("exit %d, want 0; stderr:\n%s", code, p.Stderr.String())
			}
			if !strings.Contains(p.Stderr.String(), "exiting 0") {
				t.Errorf("stderr does not say why the exit is 0:\n%s", p.Stderr.String())
			}
		})
	}
}

// A crash keeps the agent's code, and so does a signal sent to acp-guard.
func TestE2EExitCodesThatKeepTheirMeaning(t *testing.T) {
	t.Parallel()
	t.Run("crash", func(t *testing.T) {
		t.Parallel()
		p := startBin(t, nil, proxy(t, []string{"--grace", "200ms"}, "--scenario", "crash", "--exit-code", "3")...)
		p.TrySend(acptest.Initialize(1), acptest.SessionNew(2))
		p.Until("2")
		p.TrySend(acptest.Prompt(3, "sess-1"))
		p.Until("3")
		if _, code := p.Finish(); code != 3 {
			t.Errorf("exit %d, want the agent's 3", code)
		}
	})
	t.Run("external SIGTERM", func(t *testing.T) {
		t.Parallel()
		p := startBin(t, nil, proxy(t, []string{"--grace", "200ms", "--log-level", "info"}, "--scenario", "hang")...)
		p.TrySend(acptest.Initialize(1))
		p.Until("1")
		if err := platform.Kill(p.Pid(), platform.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// Closing stdin only once the signal was forwarded: the client's
		// EOF must not be what ends the session.
		if !p.Stderr.WaitFor("forwarding signal") {
			t.Fatalf("no signal forwarded: %s", p.Stderr.String())
		}
		if _, code := p.Finish(); code != 128+int(platform.SIGTERM) {
			t.Errorf("exit %d, want %d", code, 128+int(platform.SIGTERM))
		}
	})
}
