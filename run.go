package acpguard

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/internal/pipeline"
	"github.com/acp-guard/acp-guard/transport"
)

// Streams are a session's client side and what else it is given at run
// time.
type Streams struct {
	// In carries the client's frames; Out receives the frames for the
	// client (ACP only: nothing else is ever written to it).
	In  io.Reader
	Out io.Writer
	// Stderr receives the agent's stderr as it comes, line by line (nil:
	// it is not copied; its lines are still the classifier's evidence).
	Stderr io.Writer
	// Signals, if set, stop the session: the first one is forwarded to
	// the agent (its process group, for an agent Run started), held
	// prompts are answered (shutting_down) and no attempt of acp-guard's
	// own starts after it; the agent is then given the grace period before
	// SIGTERM and SIGKILL. The context ending does the same as SIGTERM.
	Signals <-chan os.Signal
}

// Result is how a session ended: the agent's exit status (ExitStatus.Code
// is what `acp-guard` exits with), the signal acp-guard itself sent it
// after the client left (GraceSignal), and the relay's counts.
type Result = transport.Result

// ExitStatus says how the agent ended.
type ExitStatus = event.ExitStatus

// AgentPipes are the ends of an agent the caller runs itself (RunPipes).
type AgentPipes = transport.AgentPipes

// StartError is returned by Run when the agent command cannot be started
// (ExitCode 127: not found; 126: not executable); every request the client
// had already sent is answered with an error first.
type StartError = transport.StartError

// Command is an agent command for Run to start.
type Command struct {
	Argv []string // the program and its arguments (looked up in PATH)
	Env  []string // its environment ("KEY=value"); nil: this process's
	Dir  string   // its working directory; "": this process's
}

// Run guards the agent command for the client on s, in this process:
// what `acp-guard [flags] -- AGENT [ARGS…]` does. It starts the agent in a
// process group of its own, relays every frame between s and the agent —
// observing, classifying, recovering and recording as cfg says — and
// returns once the agent has exited and every client request has been
// answered exactly once. The error is a *ConfigError, a *StartError, or
// nil for a session that ran (whatever the agent's exit code).
func Run(ctx context.Context, cfg Config, cmd Command, s Streams) (Result, error) {
	if len(cmd.Argv) == 0 {
		return Result{}, &ConfigError{Field: "Command", Err: errors.New("no agent command given")}
	}
	pl, err := pipeline.Assemble(ctx, cfg.options(), pipeline.Origin{Argv: cmd.Argv})
	if err != nil {
		return Result{}, configError(err)
	}
	return pl.Run(ctx, s.options(transport.Options{Argv: cmd.Argv, Env: cmd.Env, Dir: cmd.Dir, StderrPTY: cfg.StderrPTY, Subreaper: cfg.Subreaper}))
}

// RunPipes guards an agent the caller runs itself — started its own way,
// or living in the same process — for the client on s: the same pipeline
// as Run, relaying between s and the agent's pipes. It takes the pipes
// over (see AgentPipes) and returns once the agent has exited (its Wait
// returned, or its stdout ended) and every client request has been
// answered. The error is a *ConfigError, or nil for a session that ran.
func RunPipes(ctx context.Context, cfg Config, agent AgentPipes, s Streams) (Result, error) {
	if agent.Stdin == nil || agent.Stdout == nil {
		return Result{}, &ConfigError{Field: "AgentPipes", Err: errors.New("need Stdin and Stdout")}
	}
	pl, err := pipeline.Assemble(ctx, cfg.options(), pipeline.Origin{Name: agent.Name})
	if err != nil {
		return Result{}, configError(err)
	}
	return pl.Run(ctx, s.options(transport.Options{Agent: &agent}))
}

// options completes transport options with the streams.
func (s Streams) options(o transport.Options) transport.Options {
	o.Stdin, o.Stdout, o.Stderr, o.Signals = s.In, s.Out, s.Stderr, s.Signals
	return o
}
