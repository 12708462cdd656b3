package acptest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/testbin"
)

// Bin is the acp-guard binary built from this checkout (internal/testbin).
func Bin(t testing.TB) string { return testbin.Path(t) }

// DemoAgent is the argv of the binary's demo agent with args.
func DemoAgent(t testing.TB, args ...string) []string {
	return append([]string{Bin(t), "demo-agent"}, args...)
}

// GuardArgv is acp-guard's argv around an agent command: --log-level info
// (so the log names the agent's pid) unless flags set a level, and a
// state directory of the test's own unless flags name one or the circuits
// (parallel tests would otherwise share the default one's circuits).
func GuardArgv(t testing.TB, flags []string, agent ...string) []string {
	argv := []string{Bin(t)}
	if !HasFlag(flags, "--log-level") {
		argv = append(argv, "--log-level", "info")
	}
	if !HasFlag(flags, "--state-dir") && !HasFlag(flags, "--circuits") {
		argv = append(argv, "--state-dir", t.TempDir())
	}
	argv = append(argv, flags...)
	argv = append(argv, "--")
	return append(argv, agent...)
}

// Guard runs `acp-guard FLAGS -- AGENT…` (GuardArgv) under t.
func Guard(t testing.TB, flags []string, agent ...string) *Proc {
	t.Helper()
	return Start(t, GuardArgv(t, flags, agent...), Options{})
}

// HasFlag reports whether args set the flag name ("--x" or "--x=…").
func HasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// CleanEnv is an environment holding only PATH, a HOME and XDG
// directories of the test's own, and extra: the developer's ACP_GUARD_*
// and configuration never leak into a test.
func CleanEnv(t testing.TB, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"XDG_CONFIG_HOME=" + filepath.Join(t.TempDir(), "config"),
		"XDG_STATE_HOME=" + filepath.Join(t.TempDir(), "state")}, extra...)
}

// WriteFile writes content to name in a new temporary directory of the
// test's and returns its path.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// RetryPolicy writes a policy document that retries transient failures up
// to max times, the first after initial seconds, then stops; hard
// failures stop. It returns the file's path.
func RetryPolicy(t testing.TB, max, initial int) string {
	t.Helper()
	return WriteFile(t, "policy.json", fmt.Sprintf(`{"version":1,
"transient":{"retry":{"enabled":true,"max_retries":%d,"initial_interval_seconds":%d},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`, max, initial))
}
