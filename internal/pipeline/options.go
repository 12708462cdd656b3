package pipeline

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
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/internal/kvstore"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// Options are the library's Config as the pipeline reads it: the same
// fields under the same names (the library's Config documents each, and
// a FieldError names them), with the policy and the catalogue as the
// library's Policy and Catalogue hold them.
type Options struct {
	Policy     *policy.Document // nil: the document in PolicyFile, else none configured
	PolicyFile string

	Engine           *classify.Engine // nil: the catalogue in CatalogueFile, else the embedded one
	CatalogueFile    string
	CatalogueOverlay string             // a file, OverlayStore, or "" (none)
	Overlay          *catalogue.Overlay // CatalogueOverlay's file, validated by Load

	Adapter      string
	Fallback     []string
	Notices      string
	StallTimeout time.Duration

	StateDir         string
	Circuits         string
	CircuitNamespace string

	Record          string
	RecordRaw       bool
	RecordOverwrite bool

	OTel          bool
	OTelSessionID string
	Getenv        func(string) string

	Logger    *slog.Logger
	MaxLine   int64
	Grace     time.Duration
	StderrPTY bool
	Subreaper bool
	Version   string

	OnTurn      func(event.TurnReport)
	OnLate      func(event.LateOutput)
	JitterSeed  uint64
	OnEvent     func(event.Event)
	EventFrames bool
}

// Load reads the files the options name — PolicyFile into Policy,
// CatalogueFile into Engine, CatalogueOverlay's file into Overlay — and
// checks every value, returning the completed copy (the library's
// Config.Load). Policy stays nil when no file is named, so a recorded
// session still decides with its recorded policy.
func (o Options) Load() (Options, error) {
	if err := o.validate(); err != nil {
		return o, err
	}
	e, err := o.engine()
	if err != nil {
		return o, err
	}
	o.Engine, o.CatalogueFile = e, ""
	if o.CatalogueOverlay != "" && o.CatalogueOverlay != OverlayStore && o.Overlay == nil {
		if o.Overlay, err = loadOverlayFile(o.CatalogueOverlay, e); err != nil {
			return o, err
		}
	}
	doc, err := o.policy()
	switch {
	case err == nil:
		o.Policy, o.PolicyFile = &doc, ""
	case !errors.Is(err, errNoPolicy):
		return o, err
	}
	return o, nil
}

// validate checks the values that do not need a file to be read, naming
// the field at fault (FieldError).
func (o *Options) validate() error {
	switch o.Notices {
	case "", guard.NoticesOff, guard.NoticesThought, guard.NoticesMessage:
	default:
		return fieldErr("Notices", "", fmt.Errorf("%q is not off, thought or message", o.Notices))
	}
	if o.StallTimeout < 0 {
		return fieldErr("StallTimeout", "", fmt.Errorf("%s is negative", o.StallTimeout))
	}
	if o.MaxLine != 0 && o.MaxLine < 1024 {
		return fieldErr("MaxLine", "", fmt.Errorf("must be at least 1024 bytes (got %d)", o.MaxLine))
	}
	if o.Grace < 0 {
		return fieldErr("Grace", "", fmt.Errorf("%s is negative", o.Grace))
	}
	if _, _, err := kvstore.ParseSpec(o.Circuits); err != nil {
		return circuitsErr(err) // names the value, password hidden
	}
	if o.CatalogueOverlay == OverlayStore {
		if k, _, _ := kvstore.ParseSpec(o.Circuits); !kvstore.Shared(o.Circuits) {
			return fieldErr("CatalogueOverlay", OverlayStore, fmt.Errorf("the circuit store %s keeps no overlay (want file or a nats:// URL)", k))
		}
	}
	if o.CircuitNamespace != "" {
		if _, err := (circuit.Key{Namespace: o.CircuitNamespace, Provider: "x", Scope: "x"}).Normalize(); err != nil {
			return fieldErr("CircuitNamespace", "", err)
		}
	}
	return nil
}

// engine returns the classification engine the options name.
func (o *Options) engine() (*classify.Engine, error) {
	switch {
	case o.Engine != nil:
		return o.Engine, nil
	case o.CatalogueFile == "":
		return catalogue.Default(), nil
	}
	e, err := catalogue.Load(o.CatalogueFile)
	if err != nil {
		return nil, fieldErr("CatalogueFile", "", err)
	}
	return e, nil
}

// errNoPolicy: the options name no policy (the caller picks the default,
// or a recorded one).
var errNoPolicy = errors.New("no policy configured")

// policy returns the policy document the options name, or errNoPolicy.
func (o *Options) policy() (policy.Document, error) {
	switch {
	case o.Policy != nil:
		return *o.Policy, nil
	case o.PolicyFile == "":
		return policy.Document{}, errNoPolicy
	}
	data, err := os.ReadFile(o.PolicyFile)
	if err != nil {
		return policy.Document{}, fieldErr("PolicyFile", "", err)
	}
	doc, err := policy.Parse(data)
	if err != nil {
		return policy.Document{}, fieldErr("PolicyFile", o.PolicyFile, fmt.Errorf("\n%w", err))
	}
	return doc, nil
}

func (o *Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

func (o *Options) getenv(k string) string {
	if o.Getenv == nil {
		return os.Getenv(k)
	}
	return o.Getenv(k)
}

func (o *Options) version() string {
	if o.Version != "" {
		return o.Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func (o *Options) grace() time.Duration {
	if o.Grace <= 0 {
		return transport.DefaultGrace
	}
	return o.Grace
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
