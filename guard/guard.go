package guard

import (
	"log/slog"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/internal/jsonscan"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// Notice channels.
const (
	NoticesOff     = "off"
	NoticesThought = "thought"
	NoticesMessage = "message"
)

// AttemptLog receives every attempt and decision (append-only).
type AttemptLog interface {
	Append(policy.Record) error
}

// Config configures a Guard.
type Config struct {
	Identity observers.Identity // adapter sources; AgentInfo is learned from initialize
	Engine   *classify.Engine
	// Catalogue, when set, is asked at the start of every turn for the
	// engine to classify with from then on (a catalogue overlay, picked
	// up between turns); nil keeps the current one. It runs on the event
	// loop and must not block. Nil: Engine throughout.
	Catalogue  func() *classify.Engine
	Policy     policy.Document
	Fallback   []string // fallback models (added after the policy document's)
	Notices    string   // off | thought | message (default thought)
	Signatures []observers.ControlSignature
	Attempts   AttemptLog // nil: none
	// OnAttemptLogged, if set, is told on the event loop, where the guard
	// learns it, that attempt record seq (from 1, in append order) was
	// written (err nil) or could not be — for every record whose result
	// something waits for, and for every failed write.
	OnAttemptLogged func(seq int, err error)
	// Events receives the event stream (Event): every event, in order,
	// on the relay's event loop. It must not block. Nil: none (and no
	// event is built).
	Events func(Event)
	// Frames adds FrameObserved events, one per frame (for debug logs).
	Frames bool
	// TraceContext reads each prompt's W3C trace context from its _meta
	// into TurnStarted (for telemetry).
	TraceContext bool
	Logger       *slog.Logger
	// Circuits are the shared circuits; nil: off.
	Circuits         *circuit.Circuits
	CircuitNamespace string // the circuit keys' namespace ("" = default)
	// CircuitHolder, when set, names this guard's sessions to the
	// circuits in place of host/pid and the guard's number in the process:
	// a replay's probe leases and wake offsets (hashed from the holder)
	// then do not depend on which process replays it.
	CircuitHolder string
	// StallTimeout arms the stall watchdog (0: off).
	StallTimeout time.Duration
	// Held is the board where prompts held for recovery are published for
	// operators, in the circuits' namespace; nil: not
	// published (the client's MethodRecovery works either way).
	Held *held.Board
	// JitterSeed seeds the full jitter of retry delays (policy.NewJitter):
	// the live proxy picks one per process and records it in the
	// transcript's meta event, a replay reuses it, so both draw the same
	// delays. 0: no jitter (each retry waits its whole backoff).
	JitterSeed uint64
}

// Guard implements transport.Hooks: it is the relay's hooks and nothing
// else, handing each frame and event to the part it belongs to. The
// parts (ARCHITECTURE.md, "The guard's parts", names their files):
//
//   - machine: the prompts in flight, their states and the one
//     transition function; the fences are armed by it;
//   - recovery: settles each attempt, decides, schedules and answers;
//   - checks: turns what the agent answered into a failure, a flag or
//     nothing;
//   - circuitClient, switcher, compactor, watchdog: the work of a state;
//   - board and actions: held prompts for operators and the client's
//     recovery request;
//   - agent: what the guard learned about the agent;
//   - emitter: the event stream and notices;
//   - journal on a worker: the attempt log.
type Guard struct {
	cfg     Config
	log     *slog.Logger
	tracker *observers.Tracker
	m       *machine
	ag      *agent
	ev      *emitter
	checks  *checks
	rc      *recovery
	circ    *circuitClient
	board   *board
	acts    *actions
	comp    *compactor
	jr      *journal
}

var (
	_ transport.Hooks     = (*Guard)(nil)
	_ transport.PassHooks = (*Guard)(nil)
)

// New returns a Guard.
func New(cfg Config) *Guard {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Notices == "" {
		cfg.Notices = NoticesThought
	}
	if cfg.Signatures == nil {
		cfg.Signatures = observers.DefaultSignatures
	}
	log, doc := cfg.Logger, cfg.Policy
	g := &Guard{cfg: cfg, log: log}
	ag := &agent{identity: cfg.Identity, sessions: make(map[string]*sessionInfo), log: log,
		fallbacks: append(append([]string(nil), doc.FallbackModels...), cfg.Fallback...)}
	ag.adapter, _ = cfg.Identity.Resolve()
	ev := &emitter{sink: cfg.Events, frames: cfg.Frames, trace: cfg.TraceContext, notices: cfg.Notices, ag: ag}
	ag.ev = ev
	jr := &journal{log: cfg.Attempts, onLogged: cfg.OnAttemptLogged}
	k := &checks{engine: cfg.Engine, source: cfg.Catalogue, doc: doc, ag: ag, jr: jr, ev: ev, log: log}
	if cfg.Engine != nil {
		k.quiet = cfg.Engine.Quiet()
	}
	tracker := observers.NewTracker(ag.adapter, k.bindSignatures(cfg.Signatures))
	k.tracker, ev.tracker = tracker, tracker
	m := &machine{prompts: make(map[*transport.Request]*prompt), doc: doc, jr: jr, log: log, ev: ev, ag: ag}
	rc := &recovery{m: m, doc: doc, log: log, tracker: tracker, ag: ag, ev: ev, checks: k,
		noPolicy: doc.Unconfigured(cfg.Fallback)}
	if cfg.JitterSeed != 0 {
		rc.jitter = policy.NewJitter(cfg.JitterSeed)
	}
	circ := &circuitClient{cc: cfg.Circuits, ns: cfg.CircuitNamespace, name: cfg.CircuitHolder,
		m: m, rc: rc, ag: ag, ev: ev, doc: doc, tracker: tracker, log: log}
	sw := &switcher{m: m, rc: rc, circ: circ, ag: ag, ev: ev}
	comp := &compactor{on: doc.Request.CompactThenRetry, m: m, rc: rc, ag: ag, ev: ev, tracker: tracker}
	wd := &watchdog{timeout: cfg.StallTimeout, m: m, rc: rc, checks: k, ev: ev, tracker: tracker}
	acts := &actions{m: m, rc: rc, sw: sw, ag: ag, ev: ev, tracker: tracker}
	b := &board{store: cfg.Held, ns: cfg.CircuitNamespace, m: m, circ: circ, ag: ag, acts: acts, log: log}
	m.circ, m.board, m.rec = circ, b, rc
	rc.circ, rc.sw, rc.comp, rc.wd = circ, sw, comp, wd
	g.tracker, g.m, g.ag, g.ev, g.checks, g.rc, g.circ, g.board, g.acts, g.comp, g.jr = tracker, m, ag, ev, k, rc, circ, b, acts, comp, jr
	return g
}

// Close ends the guard's workers once what they have queued ran: the
// circuit store's, the board's (and its watch), then the attempt log's
// (its records still queued are written). Call it once the relay is done
// with the Guard, before closing the attempt log.
func (g *Guard) Close() error {
	g.circ.w.close()
	g.board.close()
	g.jr.close()
	return nil
}

// Adapter returns the adapter currently in effect.
func (g *Guard) Adapter() string { return g.ag.adapter }

// KeepParams keeps session/prompt params so a retry can send them again.
func (g *Guard) KeepParams(method string) bool {
	return method == acp.AgentMethodSessionPrompt || method == acp.AgentMethodSessionSetModel
}

// ClientMsg observes client frames: prompts start turns; cancels are
// recorded and end pending waits.
func (g *Guard) ClientMsg(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	if g.ev.frames && g.ev.on() {
		defer g.ev.frame(c, transport.C2A, m, req, transport.Forward)
	}
	switch m.Kind {
	case transport.KindRequest:
		if m.Method == MethodRecovery && req != nil {
			return g.acts.request(c, m, req)
		}
		if m.Method == acp.AgentMethodSessionPrompt && req != nil {
			g.rc.start(c, req)
		}
	case transport.KindNotification:
		if m.Method == MethodRecovery {
			// acp-guard's own method, sent without an id: nothing can
			// answer it, and it is not the agent's.
			g.log.Warn("extension request sent as a notification (no id); dropped", "method", m.Method)
			return transport.Drop
		}
		if m.Method == acp.AgentMethodSessionCancel {
			sid, _ := jsonscan.String(jsonscan.Get(m.Params, "sessionId"))
			g.tracker.Cancel(sid)
			g.rc.cancelWaits(c, sid)
		}
	}
	return transport.Forward
}

// AgentMsg observes agent frames and settles prompt turns.
func (g *Guard) AgentMsg(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	v := g.agentMsg(c, m, req)
	if g.ev.frames && g.ev.on() {
		g.ev.frame(c, transport.A2C, m, req, v)
	}
	return v
}

func (g *Guard) agentMsg(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	switch m.Kind {
	case transport.KindInvalid:
		g.tracker.Unparseable()
		g.rc.lateUnparseable(c)
	case transport.KindNotification:
		if m.Method == acp.ClientMethodSessionUpdate {
			suppress, parsed := g.tracker.ObserveParams(m.Params)
			if g.m.waiting > 0 {
				g.rc.lateUpdate(c)
			}
			if g.m.probes > 0 {
				g.circ.progress(c)
			}
			if suppress {
				return transport.Drop
			}
			if g.comp.on {
				return g.comp.update(c, m, parsed && g.tracker.LastKind != observers.UpdateOther)
			}
		}
	case transport.KindRequest:
		if req != nil {
			g.tracker.Effect(req.SessionID, m.Method)
			g.rc.lateRequest(c, req.SessionID)
		}
	case transport.KindResponse:
		return g.agentResponse(c, m, req)
	}
	return transport.Forward
}

// PassThrough lets an agent frame be written before AgentMsg sees it
// (transport.PassHooks): an agent request, a notification other than
// session/update, or a session/update that cannot be suppressed — while
// no prompt is held for recovery (late activity stops a held prompt, and
// its answer must not follow frames it had not seen), no probe runs, no
// compaction watches the updates and no FrameObserved event is wanted.
// For those AgentMsg only observes and forwards, and observing them
// changes nothing this test reads.
func (g *Guard) PassThrough(m *transport.Msg) bool {
	if g.m.waiting > 0 || g.m.probes > 0 || g.comp.on || (g.ev.frames && g.ev.on()) {
		return false
	}
	switch m.Kind {
	case transport.KindRequest:
		return true
	case transport.KindNotification:
		return m.Method != acp.ClientMethodSessionUpdate || !g.tracker.MaySuppress(m.Params)
	}
	return false
}

// agentResponse learns from the answers to rare requests and settles
// session/prompt turns.
func (g *Guard) agentResponse(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	if req == nil {
		return transport.Forward
	}
	if v, ok := g.checks.setupFailure(c, req, m); ok {
		return v
	}
	switch req.Method {
	case acp.AgentMethodInitialize:
		if info, ok := agentInfo(m.Result); ok {
			src := g.ag.identify(info)
			g.tracker.Adapter = g.ag.adapter
			if g.ev.on() {
				g.ev.emit(AgentIdentified{EventBase: EventBase{At: c.Now(), Agent: g.ag.adapter}, Source: src, Name: info.Name, Version: info.Version})
			}
		}
		if m.Error == nil && g.cfg.Policy.Recovers(g.cfg.Fallback) {
			// The client learns it can act on held prompts (operator.go).
			if line, ok := advertise(m); ok {
				c.Reply(req, line)
				return transport.Drop
			}
		}
	case acp.AgentMethodSessionNew, acp.AgentMethodSessionLoad, acp.AgentMethodSessionResume, acp.AgentMethodSessionFork:
		if sid := g.ag.learnSession(req, m); sid != "" {
			g.circ.warm(c, g.ag.session(sid).currentModel)
			return g.ag.fallbackCheck(c, req, m, sid)
		}
	case acp.AgentMethodSessionSetConfigOption:
		g.ag.learnConfigResult(req, m)
	case acp.AgentMethodSessionSetModel:
		if m.Error == nil {
			if model, ok := requestedModel(req.Params); ok {
				g.ag.session(req.SessionID).currentModel = model
			}
		}
	case acp.AgentMethodSessionPrompt:
		if p, ok := req.Tag.(*prompt); ok {
			if p.first.Returned {
				// The client's own attempt already returned and was
				// held for recovery: another response with its id is a
				// late duplicate. Keep the request pending for the
				// recovery's single answer.
				return transport.Hold
			}
			r := parseReply(m)
			return g.rc.settle(c, p, m, &r, true)
		}
	}
	return transport.Forward
}

// ProxyResponse handles answers to the guard's own requests.
func (g *Guard) ProxyResponse(c transport.Ctl, m *transport.Msg, req *transport.Request) {
	r := parseReply(m)
	if g.ev.frames && g.ev.on() {
		g.ev.frame(c, transport.A2C, m, req, transport.Drop)
	}
	g.ev.attemptDone(c, req, &r)
	switch tag := req.Tag.(type) {
	case *prompt:
		g.rc.retried(c, tag, m, &r)
	case *modelSwitch:
		g.rc.sw.switched(c, tag, &r)
	case *compaction:
		g.comp.compacted(c, tag, &r)
	}
}

// Stderr adds the line to open turns' evidence.
func (g *Guard) Stderr(c transport.Ctl, line string) { g.tracker.Stderr(line, c.Now()) }

// ClientClosed stops every pending timer: nobody is left to answer.
func (g *Guard) ClientClosed(c transport.Ctl) {
	g.m.closed = true
	g.m.stopTimers()
}

// AgentExit marks open turns and stops timers; pending prompts are then
// answered by the relay through ExitData.
func (g *Guard) AgentExit(c transport.Ctl, st transport.ExitStatus) {
	if g.ev.on() {
		g.ev.emit(AgentExited{EventBase: EventBase{At: c.Now(), Agent: g.ag.adapter}, Status: st})
	}
	g.tracker.Exit()
	g.ag.closeAllLate(c)
	g.m.stopTimers()
}

// ExitData adds a verdict on the agent's death to a pending prompt's error:
// the prompt moves to action_required (agent_exited) and the relay writes
// the answer with this data.
func (g *Guard) ExitData(c transport.Ctl, req *transport.Request, st transport.ExitStatus, base map[string]any) map[string]any {
	p, ok := req.Tag.(*prompt)
	if !ok {
		return g.checks.launchFailure(c, req, st, base)
	}
	return g.rc.exited(c, p, st, base)
}

// Stopping answers every prompt the guard holds (a wait, a model switch,
// a compaction) with its failure at once, reason shutting_down: acp-guard
// got a stop signal, the relay refuses new requests of the proxy's own
// from now on, and the client should not wait for a retry that will
// never be sent.
func (g *Guard) Stopping(c transport.Ctl) { g.rc.shutdown(c) }
