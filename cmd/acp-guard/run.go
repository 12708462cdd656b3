package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
	circuits  circuitOptions
	argv      []string
}

func bindRunFlags(fs *pflag.FlagSet, o *runOptions) {
	fs.Int64Var(&o.maxLine, "max-line", transport.DefaultMaxLine, "largest frame in bytes; longer lines are discarded with an error")
	fs.DurationVar(&o.grace, "grace", 5*time.Second, "after the client closes stdin: wait this long, then SIGTERM, then after as long again SIGKILL")
	fs.BoolVar(&o.stderrPTY, "stderr-pty", false, "give the agent a pseudo-terminal as stderr")
	fs.StringVar(&o.log.file, "log-file", "", "write logs to this file (0600) instead of stderr")
	fs.StringVar(&o.log.level, "log-level", "warn", "log level: debug, info, warn, error")
	fs.StringVar(&o.log.format, "log-format", "text", "log format: text or json")
	bindGuardFlags(fs, &o.guard)
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
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.argv = args
			return runProxy(cmd.Context(), s, o)
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
			return cmd.Help()
		}
		o.argv = args
		return runProxy(cmd.Context(), s, o)
	}
}

func runProxy(ctx context.Context, s *streams, o *runOptions) error {
	if o.maxLine < 1024 {
		return withCode(exitUsage, fmt.Errorf("--max-line must be at least 1024 bytes (got %d)", o.maxLine))
	}
	stderr := syncio.NewWriter(s.err)
	log, closeLog, err := newLogger(o.log, stderr)
	if err != nil {
		return withCode(exitUsage, err)
	}
	defer closeLog()

	g, err := newGuard(o, log)
	if err != nil {
		return withCode(exitUsage, err)
	}
	defer g.close()

	if path := os.Getenv("ACP_GUARD_CPUPROFILE"); path != "" {
		// For profiling the relay under a benchmark (docs/PERFORMANCE.md).
		if stop, err := startCPUProfile(path); err == nil {
			defer stop()
		}
	}
	// Loading the catalogue is the only big allocation
	// before relaying: give that memory back before the session starts.
	debug.FreeOSMemory()

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	res, err := transport.Run(ctx, transport.Options{
		Argv:      o.argv,
		MaxLine:   o.maxLine,
		Grace:     o.grace,
		StderrPTY: o.stderrPTY,
		Stdin:     s.in,
		Stdout:    s.out,
		Stderr:    stderr,
		Signals:   sigs,
		Logger:    log,
		Hooks:     g.hooks,
		Tap:       g.tap,
		Redact:    g.redact,
		// Orphans of the agent are reaped here, not left as zombies
		// (acp-guard may be PID 1 of a container).
		Subreaper: runtime.GOOS == "linux",
	})
	var se *transport.StartError
	if errors.As(err, &se) {
		return withCode(exitCode(se.ExitCode), err)
	}
	if err != nil {
		return withCode(exitFailure, err)
	}
	log.Info("relay finished", "exit", res.Exit.Code, "client_frames", res.Counts.ClientFrames, "agent_frames", res.Counts.AgentFrames,
		"invalid_from_agent", res.Counts.InvalidFromAgent, "oversize_from_agent", res.Counts.OversizeFromAgent,
		"stderr_dropped_from_evidence", res.Counts.StderrDropped,
		"fragments_from_agent", res.Counts.FragmentsFromAgent, "fragments_from_client", res.Counts.FragmentsFromClient,
		"duplicate_proxy_answers", res.Counts.DuplicateProxyAnswers, "ids_restored", res.Counts.IDsRestored)
	if res.Exit.Code == 0 {
		return nil
	}
	code := res.Exit.Code
	if code < 0 || code > 255 {
		code = 1
	}
	return withCode(exitCode(code), nil)
}

func startCPUProfile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
