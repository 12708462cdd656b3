package acpguard

import (
	"log/slog"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/internal/pipeline"
	"github.com/acp-guard/acp-guard/transport"
)

// Config is everything that shapes a guarded session. Its fields mirror
// the proxy's command-line options one to one (the flag is named beside
// each); the zero value is `acp-guard -- AGENT` with no flags and no
// configuration file.
type Config struct {
	// Policy is the recovery policy (--policy, already parsed: ParsePolicy,
	// LoadPolicy). Nil: the document in PolicyFile, else the default
	// policy (no retries, no waits; stop) — for a recorded session, the
	// policy it was recorded under.
	Policy *Policy
	// PolicyFile is a policy document to read when Policy is nil.
	PolicyFile string

	// Catalogue classifies failures (LoadCatalogue, DefaultCatalogue).
	// Nil: the catalogue in CatalogueFile (--catalogue), else the embedded
	// one.
	Catalogue     *Catalogue
	CatalogueFile string
	// CatalogueOverlay adds or overrides rules of the catalogue without a
	// new binary (--catalogue-overlay): a file (an overlay document,
	// docs/CATALOGUE.md), validated before the session starts — a refusal
	// is a *ConfigError — and looked at again (a stat) at every turn's
	// start; or OverlayStore ("store"): the overlay published in the
	// circuits' store (`acp-guard catalogue publish`), read at the start
	// and watched. A changed overlay is validated before use and applies
	// from the next turn; a refused one is logged and the catalogue in
	// use is kept. Empty: none (nothing is looked at). A recorded session
	// classifies with the overlays its transcript recorded instead.
	CatalogueOverlay string
	// overlay is CatalogueOverlay's file, validated by Load.
	overlay *catalogue.Overlay

	// Adapter says which agent is behind the proxy (--adapter), e.g.
	// cursor-acp. Empty: the agent's initialize answer (agentInfo.name),
	// else the basename of its command.
	Adapter string
	// Fallback lists models to switch to, in order, when the policy says
	// skip (--fallback-models), after the policy's fallback_models.
	Fallback []string
	// Notices is the retry-notice channel (--notices): NoticesOff,
	// NoticesThought or NoticesMessage. Empty: thought (for a recorded
	// session, the channel it was recorded with).
	Notices string
	// StallTimeout arms the stall watchdog (--stall-timeout). Zero: the
	// policy's stall_timeout_seconds (for a recorded session, the timeout
	// it was recorded with), else off.
	StallTimeout time.Duration

	// StateDir holds the attempt log, the file circuit store and the
	// held-prompt store (--state-dir). Empty: $XDG_STATE_HOME/acp-guard
	// for a live session, which creates it and checks it can be written
	// before the agent starts whenever the session needs it (a
	// *ConfigError otherwise); a replayed or served session keeps all of
	// them in memory unless StateDir or Circuits names a place.
	StateDir string
	// Circuits is where the circuits shared with other sessions live
	// (--circuits): "file" (the state directory), "memory" (this process
	// only), "off", or a nats:// or tls:// URL (a NATS JetStream key-value
	// bucket). Prompts held for recovery are published beside them for
	// operators (`acp-guard held`) with "file" and NATS, and so is a live
	// session's presence (`acp-guard console`; package presence). Empty: "file" for
	// a live session, "memory" for a replayed or served one (off when the
	// recording ran without circuits).
	Circuits string
	// CircuitNamespace separates tenants sharing one store
	// (--circuit-namespace). Empty: "default".
	CircuitNamespace string

	// Record writes the session as a JSONL transcript to this new file
	// (--record; {pid}, {time} and {session} in the name give one file per
	// run). RecordRaw keeps secrets in it (--record-raw); RecordOverwrite
	// lets it replace an existing file (--record-overwrite).
	Record          string
	RecordRaw       bool
	RecordOverwrite bool

	// OTel exports OpenTelemetry traces and metrics over OTLP (--otel);
	// the standard OTEL_* variables (read through Getenv) also turn it on
	// and configure it (docs/TELEMETRY.md). Replayed and served sessions
	// never export. A telemetry setting that cannot be used is logged and
	// telemetry stays off: it never stops a session from starting.
	OTel bool
	// OTelSessionID is how exported spans name the ACP session
	// (--otel-session-id, or ACP_GUARD_OTEL_SESSION_ID): "hash" (a
	// 16-hex-digit SHA-256 prefix), "raw" (the id itself, to join with the
	// agent's own telemetry) or "omit". Empty: hash. Another value is a
	// telemetry setting that cannot be used: logged, telemetry off.
	OTelSessionID string
	// Getenv reads the environment for the OTEL_* variables. Nil:
	// os.Getenv.
	Getenv func(string) string

	// Logger receives acp-guard's logs. Nil: discarded.
	Logger *slog.Logger
	// MaxLine is the largest frame in bytes (--max-line; at least 1024).
	// Zero: 64 MiB.
	MaxLine int64
	// Grace is how long the agent is given after the client closes its
	// input before SIGTERM, and after SIGTERM before SIGKILL (--grace).
	// Zero: DefaultGrace (5 s).
	Grace time.Duration
	// StderrPTY gives a started agent a pseudo-terminal as stderr
	// (--stderr-pty).
	StderrPTY bool
	// Subreaper makes this process a child subreaper (Linux) while Run's
	// agent runs and reaps the orphans the agent leaves: the CLI sets it,
	// as it may be PID 1 of a container. It changes the whole process, so
	// a library leaves it off unless it owns the process.
	Subreaper bool

	// Version is acp-guard's version as recorded in transcripts and
	// exported in telemetry. Empty: the module version from the build.
	Version string

	// OnTurn, if set, is called once per client session/prompt as it is
	// answered, with what the guard decided; it runs on the relay's event
	// loop and must not block. (It is OnEvent's Answered events, reduced
	// to their reports.)
	OnTurn func(TurnReport)
	// OnLate, if set, is called with the late output of an answered
	// prompt (text for its session after the answer and before the
	// session's next prompt) when that window closes; on the relay's event
	// loop, must not block. (It is OnEvent's LateOutput events.)
	OnLate func(LateOutput)

	// JitterSeed seeds the full jitter on retry delays (--jitter-seed,
	// hidden). Zero: a random seed per live session; a replayed or served
	// session draws with its recording's (none when it has none). The
	// seed is recorded in the transcript's meta event.
	JitterSeed uint64
	// OnEvent, if set, receives the session's typed event stream (Event):
	// every turn started, failure classified, transition, attempt, notice,
	// answer, silent flag, circuit decision, stall and agent exit, in the
	// order they happened, each stamped with the event loop's time. It
	// runs on the relay's event loop, under its lock: it must not block or
	// do I/O — queue work for another goroutine (as telemetry does).
	OnEvent func(Event)
	// EventFrames adds FrameObserved events to OnEvent: one per frame,
	// saying where it went (direction, kind, method, id, size), never
	// what it holds.
	EventFrames bool
}

// ProviderError is the structured failure acp-guard answers a client
// request with, under error.data.providerError (its fields and their
// wire order are event.ProviderError's).
type ProviderError = event.ProviderError

// Notice channels (Config.Notices): where the client is told what
// happens next while acp-guard holds a failed prompt (docs/WIRE.md,
// "A retry notice").
const (
	NoticesOff     = "off"     // not told
	NoticesThought = "thought" // an agent_thought_chunk
	NoticesMessage = "message" // an agent_message_chunk
)

// DefaultMaxLine is the default line cap (Config.MaxLine).
const DefaultMaxLine = transport.DefaultMaxLine

// DefaultGrace is the default grace period (Config.Grace).
const DefaultGrace = transport.DefaultGrace

// Load reads the files the configuration names — PolicyFile into Policy,
// CatalogueFile into Catalogue — and checks every value, returning the
// completed copy or a *ConfigError naming the option at fault. Sessions
// started with the result read no configuration file and fail on nothing
// but a transcript that cannot be created; an orchestrator loads once and
// runs many sessions with it. Policy stays nil when no file is named, so a
// recorded session still decides with its recorded policy.
func (c Config) Load() (Config, error) {
	o, err := c.options().Load()
	if err != nil {
		return c, configError(err)
	}
	c.Catalogue, c.CatalogueFile, c.overlay = &Catalogue{engine: o.Engine}, "", o.Overlay
	if o.Policy != nil {
		c.Policy, c.PolicyFile = &Policy{doc: *o.Policy}, ""
	}
	return c, nil
}

// options are the configuration as the pipeline reads it: every field
// under its own name, the policy and the catalogue as their documents.
func (c *Config) options() pipeline.Options {
	o := pipeline.Options{
		PolicyFile: c.PolicyFile, CatalogueFile: c.CatalogueFile,
		CatalogueOverlay: c.CatalogueOverlay, Overlay: c.overlay,
		Adapter: c.Adapter, Fallback: c.Fallback, Notices: c.Notices, StallTimeout: c.StallTimeout,
		StateDir: c.StateDir, Circuits: c.Circuits, CircuitNamespace: c.CircuitNamespace,
		Record: c.Record, RecordRaw: c.RecordRaw, RecordOverwrite: c.RecordOverwrite,
		OTel: c.OTel, OTelSessionID: c.OTelSessionID, Getenv: c.Getenv,
		Logger: c.Logger, MaxLine: c.MaxLine, Grace: c.Grace, StderrPTY: c.StderrPTY, Subreaper: c.Subreaper,
		Version: c.Version, OnTurn: c.OnTurn, OnLate: c.OnLate, JitterSeed: c.JitterSeed,
		OnEvent: c.OnEvent, EventFrames: c.EventFrames,
	}
	if c.Policy != nil {
		o.Policy = &c.Policy.doc
	}
	if c.Catalogue != nil {
		o.Engine = c.Catalogue.engine
	}
	return o
}
