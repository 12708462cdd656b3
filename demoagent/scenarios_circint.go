package demoagent

// A provider outage shared by several agent processes (shared circuits):
// tests and measurements point every agent at one outage file
// and one attempts file through the environment.

import (
	"fmt"
	"os"
	"time"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// Environment of the "outage" scenario.
const (
	// EnvOutageFile names a file: while it exists, every prompt fails
	// with --error (default: a transient error of --agent-name's shape).
	EnvOutageFile = "ACP_DEMO_OUTAGE_FILE"
	// EnvAttemptsFile names a file every prompt appends to (O_APPEND, one
	// write per line): "start PID N MODEL UNIXNANO" when it arrives, then
	// "fail …" or "ok …" (same fields) just before it is answered.
	EnvAttemptsFile = "ACP_DEMO_ATTEMPTS_FILE"
)

func init() {
	scenarios = append(scenarios,
		&scenario{name: "outage", description: "prompts fail with --error while the file $" + EnvOutageFile + " exists, succeed otherwise; each attempt is logged to $" + EnvAttemptsFile, prompt: promptOutage},
	)
}

func promptOutage(t *turn) error {
	logAttempt("start", t)
	if path := os.Getenv(EnvOutageFile); path != "" {
		if _, err := os.Lstat(path); err == nil {
			logAttempt("fail", t)
			return errorScript("", t.failKind())(t)
		}
	}
	logAttempt("ok", t)
	return promptSuccess(t)
}

// logAttempt appends one line to $ACP_DEMO_ATTEMPTS_FILE, if set.
func logAttempt(what string, t *turn) {
	path := os.Getenv(EnvAttemptsFile)
	if path == "" {
		return
	}
	f, err := platform.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.a.logf("attempts file: %v", err)
		return
	}
	defer f.Close()
	_, _ = fmt.Fprintf(f, "%s %d %d %s %d\n", what, os.Getpid(), t.n, t.model, time.Now().UnixNano())
}
