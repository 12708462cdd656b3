package demoagent

// Hostile agents for the fault matrix (docs/RELIABILITY.md): each plays one fault the
// proxy must survive without costing the client an answer.

import (
	"fmt"
	"os"
	"os/signal"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/internal/platform"
)

func init() {
	scenarios = append(scenarios,
		&scenario{name: "double-answer", description: "the first --fail prompts fail like fail-then-succeed; later prompts are answered end_turn twice", prompt: promptDoubleAnswer},
		&scenario{name: "fail-ignore-term", stayAfterEOF: true, start: startIgnoreStop,
			description: "ignores SIGTERM, SIGINT and SIGHUP; logs \"prompt N received\" and fails every prompt like fail-then-succeed; stays until killed", prompt: promptAlwaysFail},
		&scenario{name: "stream-exit", description: "--count message chunks of --size bytes, end_turn, then exits at once (code 0) without waiting for stdin EOF", prompt: promptStreamExit},
		&scenario{name: "close-stdout", stayAfterEOF: true, description: "one message chunk, then closes its stdout without answering and keeps running until killed", prompt: promptCloseStdout},
	)
}

func promptDoubleAnswer(t *turn) error {
	if t.n <= t.a.opts.Fail {
		return errorScript("", t.failKind())(t)
	}
	if err := t.message("Answered twice."); err != nil {
		return err
	}
	if err := t.end(acp.StopReasonEndTurn); err != nil {
		return err
	}
	return t.end(acp.StopReasonEndTurn)
}

// startIgnoreStop ignores the three stop signals acp-guard forwards.
func startIgnoreStop(a *agent) (func(), error) {
	sigs := []os.Signal{platform.SIGTERM, platform.SIGINT, platform.SIGHUP}
	signal.Ignore(sigs...)
	a.logf("ignoring SIGTERM, SIGINT and SIGHUP")
	return func() { signal.Reset(sigs...) }, nil
}

func promptAlwaysFail(t *turn) error {
	t.a.logf("prompt %d received", t.n)
	return errorScript("", t.failKind())(t)
}

func promptStreamExit(t *turn) error {
	frame := paddedMessage(t.sessionID, t.a.opts.Size)
	for range t.a.opts.Count {
		t.sent++
		if err := t.a.w.write(frame, false); err != nil {
			return err
		}
	}
	if err := t.end(acp.StopReasonEndTurn); err != nil { // flushes
		return err
	}
	t.a.logf("answered prompt %d; exiting at once", t.n)
	return &ExitError{Code: 0}
}

func promptCloseStdout(t *turn) error {
	if err := t.message("About to close stdout."); err != nil {
		return err
	}
	f, ok := t.a.w.underlying.(*os.File)
	if !ok {
		return fmt.Errorf("demo agent: stdout is not a file; cannot close it")
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("demo agent: closing stdout: %w", err)
	}
	t.a.logf("closed stdout in prompt %d; still running", t.n)
	return nil
}
