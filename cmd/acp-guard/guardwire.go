package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/replay"
	"github.com/acp-guard/acp-guard/telemetry"
	"github.com/acp-guard/acp-guard/transport"
)

// guardOptions configure observation, classification, recovery and
// recording.
type guardOptions struct {
	adapter    string
	catalogue  string
	policyFile string
	fallback   []string
	notices    string
	stateDir   string
	record     string
	recordRaw  bool
	recordOver bool
	stall      time.Duration
	jitterSeed uint64
}

func bindGuardFlags(fs *pflag.FlagSet, o *guardOptions) {
	fs.StringVar(&o.adapter, "adapter", "", "which agent is behind the proxy, e.g. cursor-acp, codex-acp (default: initialize's agentInfo.name, else the command's basename)")
	fs.StringVar(&o.catalogue, "catalogue", "", "load an operator-reviewed catalogue (JSON) instead of the embedded one; it must pass its own fixtures")
	fs.StringVar(&o.policyFile, "policy", "", "recovery policy document (JSON); default: no retries, stop (skip with no fallback)")
	fs.StringSliceVar(&o.fallback, "fallback-models", nil, "models to fall back to, in order, when a policy says skip")
	fs.StringVar(&o.notices, "notices", guard.NoticesThought, "retry notices to the client: off, thought or message")
	fs.StringVar(&o.stateDir, "state-dir", "", "directory for the attempt log (default: $XDG_STATE_HOME/acp-guard)")
	fs.StringVar(&o.record, "record", "", "record the session as a JSONL transcript to this new file (0600; its directory must exist; an existing file or a symbolic link is refused); {pid}, {time} and {session} in the name give one file per run")
	fs.BoolVar(&o.recordOver, "record-overwrite", false, "let --record replace an existing file")
	fs.BoolVar(&o.recordRaw, "record-raw", false, "do not redact secrets in the recorded transcript")
	fs.Uint64Var(&o.jitterSeed, "jitter-seed", 0, "seed of the full jitter on retry delays (default: random per process; it is recorded in --record's meta event)")
	_ = fs.MarkHidden("jitter-seed") // for tests and replays: normal runs draw a random seed
	fs.DurationVar(&o.stall, "stall-timeout", 0, "answer a prompt agent_stalled after the agent sent nothing for this long (session/cancel first); default: the policy's stall_timeout_seconds, else off")
}

// guardWiring is what runProxy plugs into the relay.
type guardWiring struct {
	hooks   transport.Hooks
	tap     transport.Tap
	redact  func(string) string
	closers []func() error
	tel     *telemetry.Telemetry // nil: telemetry off
	// clientClosed, when recording, is set once the client's input ended
	// (runProxy wraps stdin with watchEOF), so the recorded exit says
	// whether it followed the client's departure.
	clientClosed *atomic.Bool
}

// loadEngine returns the embedded catalogue or the one in path.
func loadEngine(path string) (*classify.Engine, error) {
	if path == "" {
		return catalogue.Default(), nil
	}
	e, err := catalogue.Load(path)
	if err != nil {
		return nil, fmt.Errorf("--catalogue: %w", err)
	}
	return e, nil
}

// loadPolicy returns the default policy or the document in path.
func loadPolicy(path string) (policy.Document, error) {
	if path == "" {
		return policy.Default(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return policy.Document{}, fmt.Errorf("--policy: %w", err)
	}
	doc, err := policy.Parse(data)
	if err != nil {
		return policy.Document{}, fmt.Errorf("--policy %s:\n%w", path, err)
	}
	return doc, nil
}

func newGuard(o *runOptions, log *slog.Logger) (*guardWiring, error) {
	gw := &guardWiring{redact: classify.Redact}
	engine, err := loadEngine(o.guard.catalogue)
	if err != nil {
		return nil, err
	}
	doc, err := loadPolicy(o.guard.policyFile)
	if err != nil {
		return nil, err
	}
	switch o.guard.notices {
	case guard.NoticesOff, guard.NoticesThought, guard.NoticesMessage:
	default:
		return nil, fmt.Errorf("--notices: %q is not off, thought or message", o.guard.notices)
	}
	cfg := guard.Config{
		Identity: observers.Identity{Flag: o.guard.adapter, Command: o.argv[0]},
		Engine:   engine,
		Policy:   doc,
		Fallback: o.guard.fallback,
		Notices:  o.guard.notices,
		Logger:   log,
		// Retry delays are drawn with full jitter (seed 004), from a seed
		// per process unless one is given; the recording keeps it.
		JitterSeed: o.guard.jitterSeed,
	}
	if cfg.JitterSeed == 0 {
		cfg.JitterSeed = policy.RandomSeed()
	}
	switch {
	case o.guard.stall < 0:
		return nil, fmt.Errorf("--stall-timeout: %s is negative", o.guard.stall)
	case o.guard.stall > 0:
		cfg.StallTimeout = o.guard.stall
	default:
		cfg.StallTimeout = time.Duration(doc.StallTimeoutSeconds) * time.Second
	}
	if recovers(doc, o.guard.fallback) || o.guard.stateDir != "" {
		// The attempt log records every decision once recovery can happen
		// (or a state directory was asked for); it is opened at the first
		// failure, so a session without one creates no files.
		cfg.Attempts = &lazyLog{dir: o.guard.stateDir, log: log}
		gw.closers = append(gw.closers, cfg.Attempts.(*lazyLog).close)
	}
	circuits, closeCircuits, err := openCircuits(o.circuits, o.guard.stateDir, recovers(doc, o.guard.fallback), log)
	if err != nil {
		return nil, err
	}
	if circuits != nil {
		cfg.Circuits, cfg.CircuitNamespace = circuits, o.circuits.namespace
		gw.closers = append(gw.closers, closeCircuits)
	}
	if o.guard.record != "" {
		start := time.Now()
		name := newRecordName(o.guard.record, start, os.Getpid())
		rec, err := replay.OpenRecorder(name.opened, replay.RecorderOptions{
			Redact: classify.Redact, RedactFrame: classify.RedactFrame, RecordRaw: o.guard.recordRaw, Overwrite: o.guard.recordOver, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("--record: %w", err)
		}
		// The adapter as known at start (the flag, else the command's
		// basename). On replay a meta adapter that is only the basename's
		// yields to the recorded initialize's agentInfo, as it did live.
		adapter, _ := cfg.Identity.Resolve()
		pol, _ := json.Marshal(doc)
		rec.Meta(replay.MetaInfo{Argv: o.argv, Adapter: adapter, Version: versionString(), Catalogue: engine.Version(),
			Policy: pol, Fallback: o.guard.fallback, JitterSeed: cfg.JitterSeed})
		gw.clientClosed = new(atomic.Bool)
		gw.tap = &recorderTap{rec: rec, start: start, name: name, clientClosed: gw.clientClosed}
		gw.closers = append(gw.closers, func() error {
			err := rec.Close()
			name.finish(log)
			return err
		})
	}
	if gw.tel, err = startTelemetry(context.Background(), o.telemetry, o.argv[0], o.guard.adapter, log); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	wireTelemetry(gw.tel, &cfg)
	g := guard.New(cfg)
	gw.hooks = g
	if gw.tel != nil {
		gw.hooks = gw.tel.Hooks(g)
	}
	// The guard's attempt-log writer goes first: its queued records are
	// written before the log closes.
	gw.closers = append([]func() error{g.Close}, gw.closers...)
	return gw, nil
}

// recovers reports whether a policy can ever retry, wait or switch.
func recovers(doc policy.Document, fallback []string) bool {
	for _, cp := range []policy.ClassPolicy{doc.Transient, doc.Hard} {
		if cp.Retry.Enabled || cp.WaitForReset.Enabled {
			return true
		}
	}
	return len(fallback) > 0 || len(doc.FallbackModels) > 0
}

func (g *guardWiring) close() {
	for _, c := range g.closers {
		_ = c()
	}
}

// recorderTap adapts a replay.Recorder to the relay's Tap.
type recorderTap struct {
	rec          *replay.Recorder
	start        time.Time
	name         *recordName
	clientClosed *atomic.Bool
}

func (t *recorderTap) ms() int64 { return time.Since(t.start).Milliseconds() }

func (t *recorderTap) Frame(dir transport.Dir, line []byte, via transport.Via, suppressed bool) {
	v := ""
	if via == transport.ViaGuard {
		v = "guard"
	}
	t.rec.Frame(t.ms(), dir.String(), line, v, suppressed)
	if t.name.wantsSession() {
		t.name.observe(line)
	}
}

func (t *recorderTap) Stderr(line string) { t.rec.Stderr(t.ms(), []byte(line)) }

func (t *recorderTap) Exit(st transport.ExitStatus) {
	if t.clientClosed.Load() {
		t.rec.ExitAfterClientClosed(t.ms(), st.Code, st.Signal)
	} else {
		t.rec.Exit(t.ms(), st.Code, st.Signal)
	}
	t.rec.Flush()
}

// lazyLog opens the attempt log on first use, so a session without
// failures creates no files. A log that cannot be opened stays failed:
// every later Append reports the same error, so no recovery is scheduled
// without its record (the guard fails closed). Only the guard's one
// attempt-log writer calls it.
type lazyLog struct {
	dir string
	log *slog.Logger
	l   *policy.Log
	err error // the error that opening the log failed with
}

func (z *lazyLog) Append(r policy.Record) error {
	if z.err != nil {
		return z.err
	}
	if z.l == nil {
		dir := z.dir
		if dir == "" {
			d, err := policy.DefaultStateDir()
			if err != nil {
				z.err = err
				return err
			}
			dir = d
		}
		l, err := policy.OpenLog(dir)
		if err != nil {
			z.err = err
			return err
		}
		z.l = l
	}
	return z.l.Append(r)
}

func (z *lazyLog) close() error {
	if z.l != nil {
		return z.l.Close()
	}
	return nil
}

// eofWatch notes when the client's input ends. Its one reader is the
// transport's client reader goroutine.
type eofWatch struct {
	r    io.Reader
	done *atomic.Bool
}

func (w *eofWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if err != nil {
		w.done.Store(true)
	}
	return n, err
}

// watchEOF wraps the client's input when something needs to know it ended.
func (g *guardWiring) watchEOF(in io.Reader) io.Reader {
	if g.clientClosed == nil {
		return in
	}
	return &eofWatch{r: in, done: g.clientClosed}
}
