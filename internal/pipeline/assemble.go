package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/presence"
	"github.com/acp-guard/acp-guard/replay"
	"github.com/acp-guard/acp-guard/telemetry"
	"github.com/acp-guard/acp-guard/transport"
)

// Origin is what a pipeline guards: a live agent (its command, or the
// name of an agent the caller runs) or a recorded one (its transcript),
// played offline on a virtual clock (Play) or served in real time
// (ServeAgent).
type Origin struct {
	Argv     []string       // a started agent's command
	Name     string         // the caller's agent, named for identity (its command)
	Recorded bool           // a recorded session, replayed or served
	Events   []replay.Event // its transcript
	Offline  bool           // played on a virtual clock: nothing recorded, nothing exported
}

func (o Origin) meta() replay.Event {
	m, _ := replay.MetaOf(o.Events)
	return m
}

func (o Origin) identity(flag string) observers.Identity {
	switch {
	case o.Recorded:
		return replay.Identity(o.Events, flag)
	case len(o.Argv) > 0:
		return observers.Identity{Flag: flag, Command: o.Argv[0]}
	}
	return observers.Identity{Flag: flag, Command: o.Name}
}

// Pipeline is one assembled session: the guard (the relay's hooks) and
// the subscribers of its event stream (the decision log, telemetry, the
// caller's), the transcript tap, and what to close when the session is
// over.
type Pipeline struct {
	opts   Options // as assembled: what Run and Play read
	log    *slog.Logger
	guard  *guard.Guard
	memLog *memoryLog           // a recorded session's attempt log, when kept in memory
	tap    *recorderTap         // nil: not recording
	tel    *telemetry.Telemetry // nil: telemetry off
	// presence keeps a live session's presence record (presence.go);
	// nil: not published.
	presence func(event.Event)
	closers  []func() error // in order, after the guard's own Close
	// notes are what a replay is told about the configuration it could
	// not take from the recording (an invalid recorded policy).
	notes []string
}

// settings are the values a pipeline runs with once the configuration and
// the recording (for a recorded session) are combined.
type settings struct {
	policy    policy.Document
	fallback  []string
	notices   string
	stall     time.Duration
	circuits  string // the store spec ("" : none, the policy never recovers)
	namespace string
	keepLog   bool   // an attempt log is kept
	jitter    uint64 // the retry jitter's seed (0: none)
	// deferLog: a recorded session's attempt-log writes complete where the
	// transcript says the live proxy learned their results.
	deferLog bool
}

// Assemble builds the pipeline cfg describes for one session from o. It is
// the one place where acp-guard's parts are put together: the live proxy
// (the library's Run, RunPipes), the offline replay (Replay; classify
// --transcript) and the served replay (Serve) all come through here, so
// they decide alike. An error names the field at fault (FieldError).
func Assemble(ctx context.Context, cfg Options, o Origin) (_ *Pipeline, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pl := &Pipeline{opts: cfg, log: cfg.logger()}
	defer func() {
		if err != nil {
			pl.close() // what was opened before the failure
		}
	}()
	engine, err := cfg.engine()
	if err != nil {
		return nil, err
	}
	set, err := pl.settle(&cfg, o)
	if err != nil {
		return nil, err
	}
	src, err := pl.catalogueSource(&cfg, o, engine, set)
	if err != nil {
		return nil, err
	}
	if src != nil {
		engine = src.cur.engine // the overlay's, from the first turn
	}
	if !o.Recorded && (set.keepLog || set.circuits == "file") {
		// The attempt log or the file circuits need the state directory:
		// one that cannot be written is a configuration error now, not a
		// state_unwritable on the first failure.
		if err := stateDirUsable(cfg.StateDir); err != nil {
			return nil, err
		}
	}
	id := o.identity(cfg.Adapter)
	gc := guard.Config{
		Identity: id, Engine: engine, Policy: set.policy, Fallback: set.fallback,
		Notices: set.notices, StallTimeout: set.stall, Logger: pl.log,
		CircuitNamespace: set.namespace, JitterSeed: set.jitter,
	}
	if src != nil {
		gc.Catalogue = src.next
	}
	gc.CircuitHolder = o.circuitHolder()
	storeKind := pl.stores(&cfg, o, set, &gc, id)
	if cfg.Record != "" {
		if err := pl.openTap(&cfg, o, id, engine, set, storeKind, gc.CircuitHolder, src); err != nil {
			return nil, err
		}
	}
	if set.keepLog {
		gc.Attempts = pl.attemptLog(&cfg, o, set.deferLog)
	}
	if pl.tap != nil {
		gc.OnAttemptLogged = pl.tap.attemptLogged
	}
	if !o.Recorded {
		pl.tel = startTelemetry(ctx, &cfg, o, pl.log)
	}
	pl.subscribe(&cfg, &gc)
	pl.guard = guard.New(gc)
	return pl, nil
}

// circuitHolder is the sessions' name to the circuits (probe leases and
// wake offsets hash it): the live proxy's own, kept in the recording, so
// that a replay — whose circuits are its own — decides as the live proxy
// did; a recording that does not say replays with a fixed one, the same
// in every process.
func (o Origin) circuitHolder() string {
	switch {
	case !o.Recorded:
		return guard.NewCircuitHolder()
	case o.meta().CircuitHolder != "":
		return o.meta().CircuitHolder
	default:
		return "replay"
	}
}

// openTap opens the transcript tap (cfg.Record) with the session's
// settings in its meta line, and has it record the catalogue overlays.
func (pl *Pipeline) openTap(cfg *Options, o Origin, id observers.Identity, engine *classify.Engine, set settings,
	storeKind, holder string, src *overlaySource) error {
	if o.Offline {
		return fieldErr("Record", "", errors.New("an offline replay writes no transcript"))
	}
	argv := o.Argv
	if o.Recorded {
		argv = o.meta().Argv
	}
	adapter, _ := id.Resolve()
	tap, err := openRecorder(cfg, replay.MetaInfo{
		Argv: argv, Adapter: adapter, Version: cfg.version(), Catalogue: engine.Version(),
		Policy: policyJSON(set.policy), Fallback: set.fallback,
		Notices: set.notices, StallTimeout: set.stall, Circuits: storeKind, CircuitNamespace: set.namespace,
		AttemptLog: set.logKind(cfg, o), JitterSeed: set.jitter, CircuitHolder: holder,
	}, pl.log)
	if err != nil {
		return err
	}
	pl.tap = tap
	pl.closers = append(pl.closers, func() error { return pl.tap.close(pl.log) })
	if src != nil {
		if src.cur.doc != nil {
			pl.tap.catalogue(0, engine.Version(), src.cur.doc)
		}
		src.record = pl.tap.catalogue
	}
	return nil
}

// catalogueSource is where the session's catalogue overlays come from
// (overlay.go): a recording's catalogue events, the overlay file, the
// circuits' store, or nowhere (nil: the guard classifies with engine
// throughout and looks at nothing).
func (pl *Pipeline) catalogueSource(cfg *Options, o Origin, engine *classify.Engine, set settings) (*overlaySource, error) {
	switch {
	case o.Recorded:
		src, notes, ok := recordedOverlays(o.Events, engine, pl.log)
		pl.notes = append(pl.notes, notes...)
		if !ok {
			return nil, nil
		}
		return src, nil
	case cfg.CatalogueOverlay == "":
		return nil, nil
	case cfg.CatalogueOverlay == OverlayStore:
		src, err := newStoreOverlay(cfg.Circuits, cfg.StateDir, set.namespace, cfg.version(), engine, pl.log)
		if err != nil {
			return nil, err
		}
		pl.closers = append(pl.closers, src.store.close)
		return src, nil
	}
	return newFileOverlay(cfg.CatalogueOverlay, cfg.Overlay, engine, pl.log)
}

// subscribe makes the guard's event stream reach its subscribers: the
// decision log, telemetry, and the caller's OnTurn, OnLate and OnEvent. With none,
// the guard builds no event at all; frames are emitted only when a
// subscriber takes them (a debug log, Options.EventFrames).
func (pl *Pipeline) subscribe(cfg *Options, gc *guard.Config) {
	var subs []subscriber
	if cfg.Logger != nil {
		subs = append(subs, subscriber{fn: guard.LogEvents(pl.log), frames: pl.log.Enabled(context.Background(), slog.LevelDebug)})
	}
	if pl.tel != nil {
		subs = append(subs, subscriber{fn: pl.tel.Event})
		gc.TraceContext = true
	}
	if pl.presence != nil {
		subs = append(subs, subscriber{fn: pl.presence})
	}
	if cfg.OnTurn != nil {
		onTurn := cfg.OnTurn
		subs = append(subs, subscriber{fn: guard.Turns(func(r event.TurnReport) { onTurn(r) })})
	}
	if cfg.OnLate != nil {
		subs = append(subs, subscriber{fn: guard.Lates(cfg.OnLate)})
	}
	if cfg.OnEvent != nil {
		subs = append(subs, subscriber{fn: cfg.OnEvent, frames: cfg.EventFrames})
	}
	gc.Events, gc.Frames = fanout(subs)
}

// subscriber is one receiver of the event stream; frames: it takes
// FrameObserved events too.
type subscriber struct {
	fn     func(event.Event)
	frames bool
}

// fanout is the one function the guard calls for the subscribers (nil for
// none), and whether any of them takes frames.
func fanout(subs []subscriber) (func(event.Event), bool) {
	frames := false
	for _, s := range subs {
		frames = frames || s.frames
	}
	switch {
	case len(subs) == 0:
		return nil, false
	case len(subs) == 1:
		return subs[0].fn, frames
	}
	return func(e event.Event) {
		_, frame := e.(event.FrameObserved)
		for _, s := range subs {
			if !frame || s.frames {
				s.fn(e)
			}
		}
	}, frames
}

// settle combines the configuration with the recording's meta event (for
// a recorded session): what the configuration leaves unset is taken from
// what the recording ran with. Each setting is one step below.
func (pl *Pipeline) settle(cfg *Options, o Origin) (settings, error) {
	meta := o.meta()
	doc, err := pl.settlePolicy(cfg, o, meta)
	if err != nil {
		return settings{}, err
	}
	s := settings{policy: doc, fallback: settleFallback(cfg, o, meta)}
	s.notices = firstOf(cfg.Notices, meta.Notices, guard.NoticesThought)
	s.stall = settleStall(cfg, meta, doc)
	s.namespace = firstOf(cfg.CircuitNamespace, meta.CircuitNamespace)
	s.jitter = settleJitter(cfg, o, meta)
	if recovers(doc, s.fallback) {
		s.circuits = settleCircuits(cfg, o, meta)
	}
	// The attempt log is kept whenever the pipeline can schedule work, or
	// a state directory is named — or, for a recorded session, when the
	// live proxy kept one. A replay deciding as the recording did (its
	// policy and models) completes each write where the live proxy learned
	// its result.
	s.keepLog = schedules(doc, s.fallback) || cfg.StateDir != "" || meta.AttemptLog != ""
	s.deferLog = meta.AttemptLog != "" && cfg.Policy == nil && cfg.PolicyFile == "" && cfg.Fallback == nil
	return s, nil
}

// settlePolicy is the policy the session decides with: the configured
// one, else the recording's (the default, with a note, when it is not
// valid), else the default.
func (pl *Pipeline) settlePolicy(cfg *Options, o Origin, meta replay.Event) (policy.Document, error) {
	doc, err := cfg.policy()
	switch {
	case err == nil:
	case !errors.Is(err, errNoPolicy):
		return doc, err
	case o.Recorded && meta.Policy != nil:
		if doc, err = policy.Parse(meta.Policy); err != nil {
			doc = policy.Default()
			pl.notes = append(pl.notes, fmt.Sprintf("the recorded policy is not valid (%v); deciding with the default", oneLine(err.Error(), 200)))
		}
	default:
		doc = policy.Default()
	}
	return doc, nil
}

// settleFallback is the fallback models: the configured ones, else — when
// the configuration names no policy either — the recording's.
func settleFallback(cfg *Options, o Origin, meta replay.Event) []string {
	if cfg.Fallback == nil && o.Recorded && cfg.Policy == nil && cfg.PolicyFile == "" {
		return meta.Fallback
	}
	return cfg.Fallback
}

// settleStall is the stall watchdog's timeout: the configured one, the
// recording's, else the policy's.
func settleStall(cfg *Options, meta replay.Event, doc policy.Document) time.Duration {
	switch {
	case cfg.StallTimeout > 0:
		return cfg.StallTimeout
	case meta.StallTimeoutMs > 0:
		return time.Duration(meta.StallTimeoutMs) * time.Millisecond
	}
	return time.Duration(doc.StallTimeoutSeconds) * time.Second
}

// settleJitter is the seed retry delays are drawn with (full jitter): the
// given seed, else the recording's (a replay then decides as the live
// proxy did), else a random one per live session.
func settleJitter(cfg *Options, o Origin, meta replay.Event) uint64 {
	switch {
	case cfg.JitterSeed != 0:
		return cfg.JitterSeed
	case o.Recorded:
		return meta.JitterSeed
	}
	return policy.RandomSeed()
}

// settleCircuits is where a session that can recover keeps its circuits:
// the configured store, else none for a recording that ran without, memory
// for another recording, the file store for a live session.
func settleCircuits(cfg *Options, o Origin, meta replay.Event) string {
	switch {
	case cfg.Circuits != "":
		return cfg.Circuits
	case o.Recorded && (meta.Circuits == "off" || meta.Circuits == ""):
		// A recording that does not say ran without circuits, or
		// before transcripts said: deciding as it did means none.
		return "off"
	case o.Recorded:
		return storeMemory
	}
	return "file"
}

// logKind is where the session keeps its attempt log, as the transcript
// records it ("" : none).
func (s settings) logKind(cfg *Options, o Origin) string {
	switch {
	case !s.keepLog:
		return ""
	case cfg.StateDir == "" && o.Recorded:
		return "memory"
	}
	return "dir"
}

// attemptLog is the session's attempt log: in the state directory (the
// configured one, else the default for a live session), or — for a
// recorded session without one — in memory, completing and failing
// writes where the recording did.
func (pl *Pipeline) attemptLog(cfg *Options, o Origin, deferred bool) guard.AttemptLog {
	if cfg.StateDir == "" && o.Recorded {
		pl.memLog = newMemoryLog(o.Events, deferred)
		return pl.memLog
	}
	d := &dirLog{dir: cfg.StateDir}
	pl.closers = append(pl.closers, d.close)
	return d
}

// replayed is what a transcript is played through (replay.Play): the
// guard — its hooks, Flush and Stopping — and the attempt-log results the
// transcript delivers.
type replayed struct {
	*guard.Guard
	log *memoryLog
}

// AttemptLogged completes the write of record seq (an attempt_log event).
func (r replayed) AttemptLogged(seq int) {
	if r.log != nil {
		r.log.complete(seq)
	}
}

// wrap completes transport options with the pipeline's parts.
func (pl *Pipeline) wrap(o *transport.Options) {
	o.Hooks, o.Redact, o.Logger = pl.guard, classify.Redact, pl.log
	if pl.tap != nil {
		o.Tap = pl.tap
		o.Stdin = &eofWatch{r: o.Stdin, done: &pl.tap.clientClosed}
	}
}

// finish ends the session's telemetry (within telemetry.MaxFlush) and
// closes everything else.
func (pl *Pipeline) finish(res transport.Result) {
	closeTelemetry(pl.tel, res.Counts)
	pl.close()
}

// close ends the guard's writers (their queued records are written first),
// then closes the attempt log, the circuit store and the transcript.
func (pl *Pipeline) close() {
	if pl.guard != nil {
		_ = pl.guard.Close()
	}
	for _, c := range pl.closers {
		_ = c()
	}
	pl.closers = nil
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// oneLine bounds s and keeps it on one line.
func oneLine(s string, max int) string {
	b := []rune(s)
	out := make([]rune, 0, min(len(b), max))
	space := false
	for _, r := range b {
		if r == '\n' || r == '\r' || r == '\t' || r == ' ' {
			space = true
			continue
		}
		if space && len(out) > 0 {
			out = append(out, ' ')
		}
		space = false
		out = append(out, r)
		if len(out) >= max {
			return string(out[:max-1]) + "…"
		}
	}
	return string(out)
}

// stores opens the circuits' and held prompts' store (and with it the
// presence record), or — without shared circuits but with a store named —
// the presence record alone, and starts publishing the session's presence;
// it returns the store's kind for the recording.
func (pl *Pipeline) stores(cfg *Options, o Origin, set settings, gc *guard.Config, id observers.Identity) (storeKind string) {
	var presenceStore *presence.Store
	if set.circuits != "" {
		st := openStores(set.circuits, cfg.StateDir, cfg.version(), !o.Recorded, pl.log)
		gc.Circuits, gc.Held, storeKind, presenceStore = st.circuits, st.held, st.kind, st.presence
		if st.close != nil {
			pl.closers = append(pl.closers, st.close)
		}
	} else if !o.Recorded && cfg.Circuits != "" {
		ps, err := openPresence(cfg.Circuits, cfg.StateDir, cfg.version(), pl.log)
		if err != nil {
			pl.log.Warn("presence not published: store unavailable", "err", err)
		} else if ps != nil {
			presenceStore = ps
			pl.closers = append(pl.closers, ps.Close)
		}
	}
	if presenceStore != nil {
		adapter, _ := id.Resolve()
		ev, stop, err := startPresence(presenceStore, set.namespace, gc.CircuitHolder, adapter, pl.log)
		if err != nil {
			pl.log.Warn("presence not published", "err", err)
		} else {
			pl.presence = ev
			// Before the store closes: the record is deleted first.
			pl.closers = append([]func() error{stop}, pl.closers...)
		}
	}
	return storeKind
}
