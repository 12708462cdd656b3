package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/internal/syncio"
	"github.com/acp-guard/acp-guard/transport"
)

// runOptions are the flags of the proxy (the root command and `run`).
type runOptions struct {
	maxLine   int64
	grace     time.Duration
	stderrPTY bool
	log       logOptions
	guard     guardOptions
	telemetry telemetryOptions
	circuits  circuitOptions
	argv      []string
}

func bindRunFlags(fs *pflag.FlagSet, o *runOptions) {
	fs.Int64Var(&o.maxLine, "max-line", transport.DefaultMaxLine, "largest frame in bytes; longer lines are discarded with an error")
	fs.DurationVar(&o.grace, "grace", acpguard.DefaultGrace, "after the client closes stdin: wait this long, then SIGTERM, then after as long again SIGKILL")
	fs.BoolVar(&o.stderrPTY, "stderr-pty", false, "give the agent a pseudo-terminal as stderr")
	fs.StringVar(&o.log.file, "log-file", "", "append logs to this file (0600; its directory must exist; a symbolic link is refused) instead of stderr")
	fs.StringVar(&o.log.level, "log-level", "warn", "log level: debug, info, warn, error")
	fs.StringVar(&o.log.format, "log-format", "text", "log format: text or json")
	bindGuardFlags(fs, &o.guard)
	bindTelemetryFlags(fs, &o.telemetry)
	bindCircuitFlags(fs, &o.circuits)
}

func init() {
	subcommands = append(subcommands, newRunCmd)
}

func newRunCmd(s *streams) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [flags] -- AGENT [ARGS...]",
		Short: "Start AGENT and relay ACP between stdio and the agent (same as the root command)",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return failNoAgent(s, cmd)
			}
			if _, err := applyConfig(cmd.Flags(), nil); err != nil {
				return failStartup(s, err)
			}
			o.argv = args
			return runProxy(cmd.Context(), s, o, cmd.Flags())
		},
	}
	bindRunFlags(cmd.Flags(), o)
	cmd.Flags().SetInterspersed(false) // flags after AGENT are the agent's
	return cmd
}

// attachProxy makes the root command itself run the proxy when given an
// agent command.
func attachProxy(root *cobra.Command, s *streams) {
	o := &runOptions{}
	bindRunFlags(root.Flags(), o)
	root.Flags().SetInterspersed(false) // flags after AGENT are the agent's
	root.Args = cobra.ArbitraryArgs
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return failNoAgent(s, cmd)
		}
		if err := checkFirstWord(cmd, args); err != nil {
			return err
		}
		if _, err := applyConfig(cmd.Flags(), nil); err != nil {
			return failStartup(s, err)
		}
		o.argv = args
		return runProxy(cmd.Context(), s, o, cmd.Flags())
	}
}

func runProxy(ctx context.Context, s *streams, o *runOptions, fs *pflag.FlagSet) error {
	log, stderr, closeLog, err := newLogger(o.log, syncio.NewWriter(s.err))
	if err != nil {
		return failStartup(s, err)
	}
	defer closeLog()
	for _, u := range unknownEnv(fs, os.Environ()) { // fs nil (the demo): none
		if u[1] != "" {
			log.Warn("unknown environment variable ignored", "name", u[0], "did_you_mean", u[1])
		} else {
			log.Warn("unknown environment variable ignored", "name", u[0])
		}
	}

	cfg, err := o.config(log).Load()
	if err != nil {
		return failStartup(s, configFlagError(err))
	}
	if stop := startProfiles(log); stop != nil {
		defer stop()
	}
	// Loading the catalogue is the only big allocation
	// before relaying: give that memory back before the session starts.
	debug.FreeOSMemory()

	sigs, external, stopSignals := proxySignals()
	defer stopSignals()

	res, err := acpguard.Run(ctx, cfg, acpguard.Command{Argv: o.argv}, acpguard.Streams{
		In: s.in, Out: s.out, Stderr: agentStderr(stderr, o.log.file != ""), Signals: sigs,
	})
	var (
		ce *acpguard.ConfigError
		se *acpguard.StartError
	)
	switch {
	case errors.As(err, &ce):
		return failStartup(s, configFlagError(ce))
	case errors.As(err, &se):
		return withCode(exitCode(se.ExitCode), err)
	case err != nil:
		return withCode(exitFailure, err)
	}
	log.Info("relay finished", "exit", res.Exit.Code, "client_frames", res.Counts.ClientFrames, "agent_frames", res.Counts.AgentFrames,
		"invalid_from_agent", res.Counts.InvalidFromAgent, "oversize_from_agent", res.Counts.OversizeFromAgent,
		"stderr_dropped_from_evidence", res.Counts.StderrDropped,
		"fragments_from_agent", res.Counts.FragmentsFromAgent, "fragments_from_client", res.Counts.FragmentsFromClient,
		"duplicate_proxy_answers", res.Counts.DuplicateProxyAnswers, "ids_restored", res.Counts.IDsRestored,
		"duplicate_answers_from_agent", res.Counts.DuplicateAnswersFromAgent, "stray_answers_from_agent", res.Counts.StrayAnswersFromAgent,
		"duplicate_answers_from_client", res.Counts.DuplicateAnswersFromClient, "stray_answers_from_client", res.Counts.StrayAnswersFromClient,
		"passed_fast", res.Counts.Passed, "pass_misjudged", res.Counts.PassMisjudged)
	code := sessionExitCode(res, external.Load())
	switch {
	case code != res.Exit.Code:
		log.Info("client ended the session and the agent exited only on acp-guard's grace signal; exiting 0",
			"agent_exit", res.Exit.Code, "signal", res.GraceSignal)
	case code != 0:
		log.Warn("agent exited with a failure", "code", res.Exit.Code, "signal", res.Exit.Signal, "external_signal", external.Load())
	}
	if code == 0 {
		return nil
	}
	return withCode(exitCode(code), nil)
}

// sessionExitCode is acp-guard's exit code for a session that ran (the
// README's exit-code table): the agent's code, except that an agent which
// ended only because acp-guard sent it the grace SIGTERM (or SIGKILL) after
// the client closed its input — codex-acp and claude-agent-acp do not exit
// on stdin EOF — ended a clean session: 0. A crash, and any signal that
// came to acp-guard from outside, keep their code.
func sessionExitCode(res transport.Result, externalSignal bool) int {
	code := res.Exit.Code
	if res.GraceSignal != "" && !externalSignal {
		bySignal := res.Exit.Signal == "terminated" || res.Exit.Signal == "killed"
		if bySignal || code == 128+int(platform.SIGTERM) || code == platform.StopExitCode || code == 128+int(platform.SIGKILL) {
			return 0
		}
	}
	if code < 0 || code > 255 {
		code = 1
	}
	return code
}

// notifySignals relays SIGINT, SIGTERM and SIGHUP to the channel the
// transport forwards to the agent, noting that one arrived. The relaying
// goroutine is ended by stop (which the caller defers).
func notifySignals() (sigs chan os.Signal, external *atomic.Bool, stop func()) {
	raw := make(chan os.Signal, 4)
	sigs = make(chan os.Signal, 4)
	external = new(atomic.Bool)
	signal.Notify(raw, platform.SIGINT, platform.SIGTERM, platform.SIGHUP)
	go func() {
		for s := range raw {
			external.Store(true)
			select {
			case sigs <- s:
			default: // four signals already wait to be forwarded
			}
		}
	}()
	return sigs, external, func() { signal.Stop(raw); close(raw) }
}

// agentStderr is where the agent's stderr is copied: acp-guard's stderr as
// it is, or the log file, redacted.
func agentStderr(diag io.Writer, toFile bool) io.Writer {
	if toFile {
		return redactingWriter{w: diag}
	}
	return diag
}
