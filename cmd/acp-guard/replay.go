package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/internal/syncio"
	"github.com/acp-guard/acp-guard/replay"
)

// replayOptions are the flags of `acp-guard replay`.
type replayOptions struct {
	files []string

	// The pipeline, both modes (what the flags leave unset comes from the
	// transcript's meta event).
	adapter   string
	catalogue string
	policy    string
	fallback  []string
	notices   string
	stall     time.Duration
	stateDir  string
	circuits  circuitOptions

	// Offline mode (playOffline).
	json bool
	html bool

	// Serve mode.
	serve     bool
	agentOnly bool
	speed     float64
	noDelay   bool
	grace     time.Duration
	record    string

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
		Use:   "replay FILE|DIR... | replay --serve FILE",
		Short: "Judge recorded transcripts offline, or serve one to a client on stdio",
		Long: `Without --serve, replay feeds each transcript through the pipeline the
live proxy runs (observers, classifier, projection, policy, stall watchdog,
circuits) on a virtual clock and prints the verdict per prompt turn (--json:
one JSON line per turn; --html: one self-contained HTML page, a section per
transcript with its turns on a timeline, every frame by its metadata and
shape (never its text), verdicts with their safe excerpts, decisions and
silent flags, to attach to a bug report). A DIR stands for every transcript (*.jsonl, not
*.expected.jsonl) in it and in the directories below it, sorted by path.
The readable output has a section per file: its turns, numbered from 1 in
the order they settled (the numbers classify --transcript --turn takes)
beside their JSON-RPC request ids, silent failures flagged, and a summary;
with more than one file, a total. It exits 1 when a file could not be read
or held a bad line. When the recording's proxy decided otherwise than the
replay, the notes on stderr say what the recording ran with and the
command line that reproduces its decision.

With --serve, replay plays the recorded agent behind that same pipeline, for
a client on stdin/stdout: the recorded agent answers each client request with
the recorded response to the matching request (same method, same order; ids
remapped to the client's) and emits its notifications, agent requests,
stderr lines and exit at their recorded times; acp-guard in front of it
decides as it did live. acp-guard exits with the recorded exit status. With
--agent-only it plays the recorded agent alone, to run behind another
acp-guard:

  acp-guard --policy other.json -- acp-guard replay --serve --agent-only crash.jsonl

Both modes decide with the configuration the transcript was recorded with
(policy, fallback models, notices, stall timeout) unless a flag says
otherwise, and keep circuits and the attempt log in memory unless
--circuits or --state-dir names a place: a replay never touches the state
live sessions share.`,
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
	fs.BoolVar(&o.html, "html", false, "print one self-contained HTML page: each transcript's turns on a timeline, its frames (metadata only), verdicts and decisions")
	fs.StringVar(&o.adapter, "adapter", "", "adapter identity, overriding the transcript's")
	fs.StringVar(&o.catalogue, "catalogue", "", "classify with the catalogue in this file")
	fs.StringVar(&o.policy, "policy", "", "decide with the policy document in this file (default: the policy the transcript was recorded under, else the default policy)")
	fs.StringSliceVar(&o.fallback, "fallback-models", nil, "models to fall back to (default: the recorded ones)")
	fs.StringVar(&o.notices, "notices", "", "retry notices: off, thought or message (default: as recorded)")
	fs.DurationVar(&o.stall, "stall-timeout", 0, "stall watchdog timeout (default: as recorded, else the policy's)")
	fs.StringVar(&o.stateDir, "state-dir", "", "keep the attempt log in this directory (default: in memory)")
	fs.StringVar(&o.circuits.store, "circuits", "", "where the replay keeps circuits: memory (default; off when the recording ran without), file (the --state-dir, else the default state directory), off, or nats://HOST:PORT")
	fs.StringVar(&o.circuits.namespace, "circuit-namespace", "", "the circuits' namespace (default: as recorded)")
	fs.BoolVar(&o.serve, "serve", false, "serve the recorded session to a client on stdio")
	fs.BoolVar(&o.agentOnly, "agent-only", false, "with --serve: act as the recorded agent alone, without acp-guard in front")
	fs.Float64Var(&o.speed, "speed", 1, "with --serve: play N times as fast as recorded")
	fs.BoolVar(&o.noDelay, "no-delay", false, "with --serve: ignore recorded times")
	fs.DurationVar(&o.grace, "grace", acpguard.DefaultGrace, "with --serve: after the client closes stdin, how long the served session may take to end")
	fs.StringVar(&o.record, "record", "", "with --serve: record the served session to this new file")
	fs.StringVar(&o.log.level, "log-level", "warn", "log level: debug, info, warn, error")
	cmd.MarkFlagsMutuallyExclusive("speed", "no-delay")
	return cmd
}

// guardFlags are the flags that configure the pipeline in front of a
// served agent.
var guardFlags = []string{"adapter", "catalogue", "policy", "fallback-models", "notices", "stall-timeout", "state-dir",
	"circuits", "circuit-namespace", "grace", "record"}

// config is the library configuration the flags describe (the rest comes
// from the transcript).
func (o *replayOptions) config(log *slog.Logger) acpguard.Config {
	return acpguard.Config{
		Adapter: o.adapter, CatalogueFile: o.catalogue, PolicyFile: o.policy, Fallback: o.fallback,
		Notices: o.notices, StallTimeout: o.stall, StateDir: o.stateDir,
		Circuits: o.circuits.store, CircuitNamespace: o.circuits.namespace,
		Grace: o.grace, Record: o.record, Logger: log, Version: versionString(),
	}
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
		if n := changed("json", "html"); n != "" {
			return fmt.Errorf("--%s cannot be used with --serve", n)
		}
		if n := changed(guardFlags...); n != "" && o.agentOnly {
			return fmt.Errorf("--%s cannot be used with --agent-only", n)
		}
		if len(o.files) != 1 {
			return fmt.Errorf("--serve takes exactly one transcript, got %d", len(o.files))
		}
		if o.speed <= 0 {
			return fmt.Errorf("--speed must be positive (got %v)", o.speed)
		}
		return nil
	}
	if n := changed("speed", "no-delay", "agent-only", "grace", "record"); n != "" {
		return fmt.Errorf("--%s needs --serve", n)
	}
	if o.json && o.html {
		return errors.New("--json and --html are two outputs: choose one")
	}
	return nil
}

func runReplay(ctx context.Context, o *replayOptions) error {
	if !o.serve {
		return playOffline(ctx, o, o.files)
	}
	return runServe(ctx, o)
}

// runServe serves one transcript and exits with its recorded status.
func runServe(ctx context.Context, o *replayOptions) error {
	stderr := syncio.NewWriter(o.err)
	o.log.format = "text"
	log, _, closeLog, err := newLogger(o.log, stderr)
	if err != nil {
		return withCode(exitUsage, err)
	}
	defer closeLog()
	cfg, err := o.config(log).Load()
	if err != nil {
		return withCode(exitUsage, configFlagError(err))
	}

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

	sopts := replay.ServeOptions{Speed: o.speed, NoDelay: o.noDelay, Logger: log}
	var code int
	if o.agentOnly {
		if code, err = replay.Serve(ctx, events, sopts, o.in, o.out, stderr); err != nil {
			return withCode(exitFailure, err)
		}
	} else {
		sigs, external, stopSignals := notifySignals()
		defer stopSignals()
		res, err := acpguard.Serve(ctx, cfg, events, sopts, acpguard.Streams{In: o.in, Out: o.out, Stderr: stderr, Signals: sigs})
		var ce *acpguard.ConfigError
		switch {
		case errors.As(err, &ce):
			return withCode(exitUsage, configFlagError(ce))
		case err != nil:
			return withCode(exitFailure, err)
		}
		// As for a live session: an agent that ended only on acp-guard's
		// own signal after the client left ended a clean session.
		code = sessionExitCode(res, external.Load())
	}
	if code < 0 || code > 255 {
		code = 1
	}
	if code != 0 {
		return withCode(exitCode(code), nil)
	}
	return nil
}
