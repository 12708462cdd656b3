package main

// Tests that run the built binary (internal/testbin) over real pipes, as
// an editor or a CI job does, through the shared harness
// (internal/acptest).

import (
	"testing"

	"github.com/acp-guard/acp-guard/cmd/acp-guard/internal/stopsig"
	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/testbin"
)

// TestMain gives the test process its stop signals back (the command's
// package catches them from initialization on; see internal/stopsig).
func TestMain(m *testing.M) {
	stopsig.Release()
	testbin.Main(m)
}

// startBin runs the binary with args in a clean environment
// (acptest.CleanEnv) plus env: the developer's own ACP_GUARD_* settings
// never leak into a test.
func startBin(t *testing.T, env []string, args ...string) *acptest.Proc {
	t.Helper()
	return acptest.Start(t, append([]string{acptest.Bin(t)}, args...), acptest.Options{Env: acptest.CleanEnv(t, env...)})
}

// runBin runs the binary to completion with stdin and returns stdout,
// stderr and the exit code.
func runBin(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return acptest.Run(t, append([]string{acptest.Bin(t)}, args...), acptest.Options{Env: acptest.CleanEnv(t, env...)}, stdin)
}

// proxy is acp-guard's arguments around the demo agent.
func proxy(t *testing.T, flags []string, agentArgs ...string) []string {
	return append(append(flags, "--"), acptest.DemoAgent(t, agentArgs...)...)
}
