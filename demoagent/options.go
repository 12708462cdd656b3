package demoagent

import (
	"fmt"
	"os"
	"time"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// Options configure one run of the demo agent. A zero field takes the
// default named in its comment; the cobra command maps its flags onto these
// fields one to one.
type Options struct {
	// Scenario names the script (see Scenarios). Empty means "success".
	Scenario string
	// AgentName is reported as agentInfo.name in the initialize response.
	// Empty means the scenario's default ("demo-agent" unless the scenario
	// imitates a particular agent, e.g. "cursor-agent" or "codex-acp").
	AgentName string
	// Count is the number of notifications in "stream" (default 20000),
	// of requests in "pingpong" (the same default) and the number of
	// stderr lines in "stderr-flood" (default 100000).
	Count int
	// Size is the approximate size in bytes of each whole frame, newline
	// included, in "stream" (default 64) and of the single frame in
	// "huge-line" (default 20 MiB).
	Size int
	// Text overrides the control chunk text of the cursor-* scenarios, the
	// error line of error-line and the notes of retry-notes.
	Text string
	// Fail is how many prompts fail before "fail-then-succeed" succeeds
	// (default 2). Negative means zero.
	Fail int
	// Error names the error kind used by "fail-then-succeed" and
	// "fail-model" (see ErrorKinds). Empty means a transient error shaped
	// like the adapter named by AgentName.
	Error string
	// BadModel is the model id that fails in "fail-model" (default model-a).
	BadModel string
	// ExitCode is the exit code of "crash" (default 3).
	ExitCode int
	// ResetIn is the reset hint of "quota-reset", relative to Now (default 60s).
	ResetIn time.Duration
	// Delay is a pause between the chunks of a turn (default 0).
	Delay time.Duration
	// IgnoreCancel makes "hang" ignore session/cancel.
	IgnoreCancel bool
	// Grandchild is the command "grandchild" starts (default sleep 300).
	Grandchild []string
	// Now is the clock used for reset hints (default time.Now).
	Now func() time.Time
}

// Defaults used when the corresponding Options field is zero.
const (
	DefaultStreamCount = 20000
	DefaultStreamSize  = 64
	DefaultFloodCount  = 100000
	DefaultHugeSize    = 20 << 20
	DefaultFail        = 2
	DefaultBadModel    = "model-a"
	DefaultExitCode    = 3
	DefaultResetIn     = 60 * time.Second
	DefaultAgentName   = "demo-agent"
)

func (o Options) withDefaults(sc *scenario) Options {
	if o.Scenario == "" {
		o.Scenario = "success"
	}
	if o.AgentName == "" {
		o.AgentName = sc.agentName
		if o.AgentName == "" {
			o.AgentName = DefaultAgentName
		}
	}
	if o.Count <= 0 {
		o.Count = DefaultStreamCount
		if sc.name == "stderr-flood" {
			o.Count = DefaultFloodCount
		}
	}
	if o.Size <= 0 {
		o.Size = DefaultStreamSize
		if sc.name == "huge-line" {
			o.Size = DefaultHugeSize
		}
	}
	if o.Fail == 0 {
		o.Fail = DefaultFail
	}
	if o.Fail < 0 {
		o.Fail = 0
	}
	if o.BadModel == "" {
		o.BadModel = DefaultBadModel
	}
	if o.ExitCode == 0 {
		o.ExitCode = DefaultExitCode
	}
	if o.ResetIn <= 0 {
		o.ResetIn = DefaultResetIn
	}
	if len(o.Grandchild) == 0 {
		o.Grandchild = []string{"sleep", "300"}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// ExitError is returned by Run when the script ends the process itself
// ("crash", "crash-signal"): the caller is expected to exit with Code, or to
// kill itself with Signal when it is non-zero.
type ExitError struct {
	Code   int
	Signal platform.Signal
}

func (e *ExitError) Error() string {
	if e.Signal != 0 {
		return fmt.Sprintf("demo agent: killed by %v", e.Signal)
	}
	return fmt.Sprintf("demo agent: exit status %d", e.Code)
}

// Exit ends the current process as e describes: it sends Signal to the
// process itself, or exits with Code. It does not return.
func (e *ExitError) Exit() {
	if e.Signal != 0 {
		_ = platform.Raise(e.Signal)
		// SIGKILL cannot be caught; other signals may be handled or ignored.
		time.Sleep(time.Second)
		os.Exit(128 + int(e.Signal))
	}
	os.Exit(e.Code)
}
