package acpguard

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/internal/kvstore"
	"github.com/acp-guard/acp-guard/policy"
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
	if err := c.validate(); err != nil {
		return c, configError(err)
	}
	e, err := c.engine()
	if err != nil {
		return c, configError(err)
	}
	c.Catalogue, c.CatalogueFile = &Catalogue{engine: e}, ""
	if c.CatalogueOverlay != "" && c.CatalogueOverlay != OverlayStore && c.overlay == nil {
		if c.overlay, err = loadOverlayFile(c.CatalogueOverlay, e); err != nil {
			return c, configError(err)
		}
	}
	doc, err := c.policy()
	switch {
	case err == nil:
		c.Policy, c.PolicyFile = &Policy{doc: doc}, ""
	case !errors.Is(err, errNoPolicy):
		return c, configError(err)
	}
	return c, nil
}

// validate checks the values that do not need a file to be read, naming
// the Config field at fault (ConfigError.Field).
func (c *Config) validate() error {
	switch c.Notices {
	case "", NoticesOff, NoticesThought, NoticesMessage:
	default:
		return fieldErr("Notices", "", fmt.Errorf("%q is not off, thought or message", c.Notices))
	}
	if c.StallTimeout < 0 {
		return fieldErr("StallTimeout", "", fmt.Errorf("%s is negative", c.StallTimeout))
	}
	if c.MaxLine != 0 && c.MaxLine < 1024 {
		return fieldErr("MaxLine", "", fmt.Errorf("must be at least 1024 bytes (got %d)", c.MaxLine))
	}
	if c.Grace < 0 {
		return fieldErr("Grace", "", fmt.Errorf("%s is negative", c.Grace))
	}
	if _, _, err := kvstore.ParseSpec(c.Circuits); err != nil {
		return circuitsErr(err) // names the value, password hidden
	}
	if c.CatalogueOverlay == OverlayStore {
		if k, _, _ := kvstore.ParseSpec(c.Circuits); !kvstore.Shared(c.Circuits) {
			return fieldErr("CatalogueOverlay", OverlayStore, fmt.Errorf("the circuit store %s keeps no overlay (want file or a nats:// URL)", k))
		}
	}
	if c.CircuitNamespace != "" {
		if _, err := (circuit.Key{Namespace: c.CircuitNamespace, Provider: "x", Scope: "x"}).Normalize(); err != nil {
			return fieldErr("CircuitNamespace", "", err)
		}
	}
	return nil
}

// engine returns the classification engine the configuration names.
func (c *Config) engine() (*classify.Engine, error) {
	switch {
	case c.Catalogue != nil:
		return c.Catalogue.engine, nil
	case c.CatalogueFile == "":
		return catalogue.Default(), nil
	}
	e, err := catalogue.Load(c.CatalogueFile)
	if err != nil {
		return nil, fieldErr("CatalogueFile", "", err)
	}
	return e, nil
}

// errNoPolicy: the configuration names no policy (the caller picks the
// default, or a recorded one).
var errNoPolicy = errors.New("no policy configured")

// policy returns the policy document the configuration names, or
// errNoPolicy.
func (c *Config) policy() (policy.Document, error) {
	switch {
	case c.Policy != nil:
		return c.Policy.doc, nil
	case c.PolicyFile == "":
		return policy.Document{}, errNoPolicy
	}
	data, err := os.ReadFile(c.PolicyFile)
	if err != nil {
		return policy.Document{}, fieldErr("PolicyFile", "", err)
	}
	doc, err := policy.Parse(data)
	if err != nil {
		return policy.Document{}, fieldErr("PolicyFile", c.PolicyFile, fmt.Errorf("\n%w", err))
	}
	return doc, nil
}

func (c *Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

func (c *Config) getenv(k string) string {
	if c.Getenv == nil {
		return os.Getenv(k)
	}
	return c.Getenv(k)
}

func (c *Config) version() string {
	if c.Version != "" {
		return c.Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func (c *Config) grace() time.Duration {
	if c.Grace <= 0 {
		return DefaultGrace
	}
	return c.Grace
}

// schedules reports whether a policy can make the guard schedule work of
// its own — a retry, a wait, a model switch, a compaction — or turn an
// empty turn into a failure: then every decision is recorded in the
// attempt log first, and a record that cannot be written stops the turn
// (state_unwritable).
func schedules(doc policy.Document, fallback []string) bool {
	return recovers(doc, fallback) || doc.Request.CompactThenRetry || doc.EmptyTurn == policy.EmptyTurnError
}

// recovers reports whether a policy can ever retry, wait or switch models:
// the sessions that share circuits (policy.Document.Recovers).
func recovers(doc policy.Document, fallback []string) bool { return doc.Recovers(fallback) }
