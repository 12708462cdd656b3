package main

import (
	"log/slog"
	"runtime"
	"time"

	"github.com/spf13/pflag"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/internal/seam"
)

// guardOptions configure observation, classification, recovery and
// recording: the flags behind acpguard.Config.
type guardOptions struct {
	adapter    string
	catalogue  string
	overlay    string
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
	fs.StringVar(&o.overlay, "catalogue-overlay", "", "add or override catalogue rules without a new binary: an overlay file (validated at start, looked at again at every turn), or \"store\" for the one published in the circuits' store (acp-guard catalogue publish)")
	fs.StringVar(&o.policyFile, "policy", "", "recovery policy document (JSON); default: no retries, stop (skip with no fallback)")
	fs.StringSliceVar(&o.fallback, "fallback-models", nil, "models to fall back to, in order, when a policy says skip")
	fs.StringVar(&o.notices, "notices", acpguard.NoticesThought, "retry notices to the client: off, thought or message")
	fs.StringVar(&o.stateDir, "state-dir", "", "directory for the attempt log (default: $XDG_STATE_HOME/acp-guard)")
	fs.StringVar(&o.record, "record", "", "record the session as a JSONL transcript to this new file (0600; its directory must exist; an existing file or a symbolic link is refused); {pid}, {time} and {session} in the name give one file per run")
	fs.BoolVar(&o.recordOver, "record-overwrite", false, "let --record replace an existing file")
	fs.BoolVar(&o.recordRaw, "record-raw", false, "do not redact secrets in the recorded transcript")
	fs.DurationVar(&o.stall, "stall-timeout", 0, "answer a prompt agent_stalled after the agent sent nothing for this long (session/cancel first); default: the policy's stall_timeout_seconds, else off")
	fs.Uint64Var(&o.jitterSeed, "jitter-seed", 0, "seed of the full jitter on retry delays (default: random per session; recorded in --record's meta event)")
	_ = fs.MarkHidden("jitter-seed") // for tests and replays: normal runs draw a random seed
}

// config is the library configuration the proxy's flags describe.
func (o *runOptions) config(log *slog.Logger) acpguard.Config {
	g := &o.guard
	return acpguard.Config{
		PolicyFile: g.policyFile, CatalogueFile: g.catalogue, CatalogueOverlay: g.overlay, Adapter: g.adapter, Fallback: g.fallback,
		Notices: g.notices, StallTimeout: g.stall, StateDir: g.stateDir,
		Circuits: o.circuits.store, CircuitNamespace: o.circuits.namespace,
		Record: g.record, RecordRaw: g.recordRaw, RecordOverwrite: g.recordOver,
		OTel: o.telemetry.on, OTelSessionID: o.telemetry.sessionID, Logger: log, MaxLine: o.maxLine, Grace: o.grace, StderrPTY: o.stderrPTY,
		Version: versionString(), JitterSeed: g.jitterSeed,
		// Orphans of the agent are reaped here, not left as zombies
		// (acp-guard may be PID 1 of a container).
		Subreaper: runtime.GOOS == "linux",
	}
}

// loadEngine returns the embedded catalogue or the one in path.
func loadEngine(path string) (*classify.Engine, error) {
	cfg, err := acpguard.Config{CatalogueFile: path}.Load()
	if err != nil {
		return nil, configFlagError(err)
	}
	return seam.Engine(cfg.Catalogue), nil
}

// catalogueOf is the library's Catalogue classifying with e (an engine
// the command observes, which the library's API does not take).
func catalogueOf(e *classify.Engine) *acpguard.Catalogue {
	return seam.NewCatalogue(e).(*acpguard.Catalogue)
}
