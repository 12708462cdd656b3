package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/acp-guard/acp-guard/internal/syncio"
	"github.com/acp-guard/acp-guard/replay"
)

// replayOptions are the flags of `acp-guard replay`.
type replayOptions struct {
	files []string

	// Offline mode (playOffline).
	json      bool
	adapter   string
	catalogue string
	policy    string

	// Serve mode.
	serve   bool
	speed   float64
	noDelay bool

	log logOptions

	in       io.Reader
	out, err io.Writer
}

func init() {
	subcommands = append(subcommands, newReplayCmd)
}

func newReplayCmd(s *streams) *cobra.Command {
	o := &replayOptions{}
	cmd := &cobra.Command{
		Use:   "replay FILE... | replay --serve FILE",
		Short: "Judge recorded transcripts offline, or serve one as a fake agent on stdio",
		Long: `Without --serve, replay feeds each transcript's agent side through the
guard's observers, classifier, projection and policy and prints the verdict
per prompt turn (--json: one JSON line per turn).

With --serve, replay acts as the recorded agent on stdin/stdout: it answers
each client request with the recorded response to the matching request (same
method, same order; ids remapped to the client's), emits the recorded
notifications, agent requests, stderr lines and exit at their recorded times,
and exits with the recorded exit status. For example:

  acp-guard -- acp-guard replay --serve crash.jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.files = args
			o.in, o.out, o.err = s.in, s.out, s.err
			if err := o.check(cmd); err != nil {
				return withCode(exitUsage, err)
			}
			return runReplay(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.json, "json", false, "print one JSON line per prompt turn")
	fs.StringVar(&o.adapter, "adapter", "", "adapter identity, overriding the transcript's")
	fs.StringVar(&o.catalogue, "catalogue", "", "classify with the catalogue in this file")
	fs.StringVar(&o.policy, "policy", "", "decide with the policy document in this file (default: the policy the transcript was recorded under, else the default policy)")
	fs.BoolVar(&o.serve, "serve", false, "act as the recorded agent on stdio")
	fs.Float64Var(&o.speed, "speed", 1, "with --serve: play N times as fast as recorded")
	fs.BoolVar(&o.noDelay, "no-delay", false, "with --serve: ignore recorded times")
	fs.StringVar(&o.log.level, "log-level", "warn", "log level: debug, info, warn, error")
	cmd.MarkFlagsMutuallyExclusive("speed", "no-delay")
	return cmd
}

// check refuses flag combinations that mix the two modes.
func (o *replayOptions) check(cmd *cobra.Command) error {
	changed := func(names ...string) string {
		for _, n := range names {
			if cmd.Flags().Changed(n) {
				return n
			}
		}
		return ""
	}
	if o.serve {
		if n := changed("json", "adapter", "catalogue", "policy"); n != "" {
			return fmt.Errorf("--%s cannot be used with --serve", n)
		}
		if len(o.files) != 1 {
			return fmt.Errorf("--serve takes exactly one transcript, got %d", len(o.files))
		}
		if o.speed <= 0 {
			return fmt.Errorf("--speed must be positive (got %v)", o.speed)
		}
		return nil
	}
	if n := changed("speed", "no-delay"); n != "" {
		return fmt.Errorf("--%s needs --serve", n)
	}
	return nil
}

func runReplay(ctx context.Context, o *replayOptions) error {
	if !o.serve {
		return playOffline(ctx, o, o.files)
	}
	return runServe(ctx, o)
}

// runServe plays one transcript as an agent and exits with its recorded
// status.
func runServe(ctx context.Context, o *replayOptions) error {
	stderr := syncio.NewWriter(o.err)
	o.log.format = "text"
	log, _, closeLog, err := newLogger(o.log, stderr)
	if err != nil {
		return withCode(exitUsage, err)
	}
	defer closeLog()

	path := o.files[0]
	f, err := os.Open(path)
	if err != nil {
		return withCode(exitFailure, fmt.Errorf("replay: %w", err))
	}
	events, errs := replay.ReadAll(f)
	f.Close()
	if notTranscript(stderr, path, events, errs) {
		return withCode(exitFailure, nil)
	}
	pr := &problems{w: stderr, path: path}
	for _, e := range errs {
		var le *replay.LineError
		if !errors.As(e, &le) {
			return withCode(exitFailure, fmt.Errorf("replay: %s: %w", path, e))
		}
		// A bad line is skipped; the rest of the transcript still serves.
		pr.printf("%s:%d: %v (line skipped)", path, le.Line, le.Err)
	}
	pr.done()
	if len(events) == 0 {
		return withCode(exitFailure, fmt.Errorf("replay: %s: no events", path))
	}

	code, err := replay.Serve(ctx, events, replay.ServeOptions{
		Speed: o.speed, NoDelay: o.noDelay, Logger: log,
	}, o.in, o.out, stderr)
	if err != nil {
		return withCode(exitFailure, err)
	}
	if code != 0 {
		return withCode(exitCode(code), nil)
	}
	return nil
}
