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
	Identity   observers.Identity // adapter sources; AgentInfo is learned from initialize
	Engine     *classify.Engine
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
	// Events receives the event stream (events.go): every event, in order,
	// on the relay's event loop. It must not block. Nil: none (and no
	// event is built).
	Events func(Event)
	// Frames adds FrameObserved events, one per frame (for debug logs).
	Frames bool
	// TraceContext reads each prompt's W3C trace context from its _meta
	// into TurnStarted (for telemetry).
	TraceContext bool
	Logger       *slog.Logger
	// Circuits are the shared circuits (circuit.go); nil: off.
	Circuits         *circuit.Circuits
	CircuitNamespace string // the circuit keys' namespace ("" = default)
	// CircuitHolder, when set, names this guard's sessions to the
	// circuits in place of host/pid and the guard's number in the process:
	// a replay's probe leases and wake offsets (hashed from the holder)
	// then do not depend on which process replays it.
	CircuitHolder string
	// StallTimeout arms the stall watchdog (0: off; stall.go).
	StallTimeout time.Duration
	// Held is the board where prompts held for recovery are published for
	// operators, in the circuits' namespace (held.go); nil: not
	// published (the client's MethodRecovery works either way).
	Held *held.Board
	// JitterSeed seeds the full jitter of retry delays (policy.NewJitter):
	// the live proxy picks one per process and records it in the
	// transcript's meta event, a replay reuses it, so both draw the same
	// delays. 0: no jitter (each retry waits its whole backoff).
	JitterSeed uint64
}

// Guard implements transport.Hooks.
type Guard struct {
	cfg      Config
	log      *slog.Logger
	adapter  string
	tracker  *observers.Tracker
	sessions map[string]*sessionInfo
	prompts  map[*transport.Request]*prompt
	waiting  int // prompts in a held state (waiting_for_reset, retry_wait, switching)
	journal  journal
	closed   bool
	circOps  worker // the circuit store's worker (worker.go)
	probes   int    // prompts holding a probe lease
	circID   string // this Guard's name to the circuits when Config.CircuitHolder is unset (NewCircuitHolder)
	jitter   policy.Jitter
	quiet    *classify.Engine // cfg.Engine without its Observed callback (textreport.go)
	// The held-prompt board (held.go): its worker, the loop's view, the
	// running watch.
	heldOps   worker
	heldBoard heldBoard
	heldWatch heldWatch
	warned    map[string]bool // fallback models already warned about (rare.go)
}

// sessionInfo is what the guard learned about a session from the agent.
type sessionInfo struct {
	models       []string // available model ids (session/set_model)
	modelOption  string   // id of a model config option (session/set_config_option)
	optionValues []string
	currentModel string
	lastFailed   bool          // the session's latest prompt was answered with a failure
	compactCmd   string        // the compaction command the agent advertised last ("" : none; compact.go)
	answered     *answeredTurn // the latest answered prompt, until the next one starts (lateoutput.go)
}

var _ transport.Hooks = (*Guard)(nil)

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
	g := &Guard{
		journal:  journal{log: cfg.Attempts, onLogged: cfg.OnAttemptLogged},
		cfg:      cfg,
		log:      cfg.Logger,
		sessions: make(map[string]*sessionInfo),
		prompts:  make(map[*transport.Request]*prompt),
	}
	if cfg.JitterSeed != 0 {
		g.jitter = policy.NewJitter(cfg.JitterSeed)
	}
	if cfg.Engine != nil {
		g.quiet = cfg.Engine.Quiet()
	}
	g.adapter, _ = cfg.Identity.Resolve()
	g.tracker = observers.NewTracker(g.adapter, g.bindSignatures(cfg.Signatures))
	return g
}

// Close writes the attempt records still queued and ends the attempt-log
// writer. Call it once the relay is done with the Guard, before closing the
// attempt log.
func (g *Guard) Close() error {
	g.circOps.close()
	g.heldOps.close()
	g.heldWatch.close()
	g.journal.close()
	return nil
}

// Adapter returns the adapter currently in effect.
func (g *Guard) Adapter() string { return g.adapter }

func (g *Guard) setAgentInfo(c transport.Ctl, info acp.Implementation) {
	g.cfg.Identity.AgentInfo = info.Name
	adapter, src := g.cfg.Identity.Resolve()
	g.adapter = adapter
	g.tracker.Adapter = adapter
	if g.on() {
		g.emit(AgentIdentified{EventBase: EventBase{At: c.Now(), Agent: adapter}, Source: src, Name: info.Name, Version: info.Version})
	}
}

// KeepParams keeps session/prompt params so a retry can send them again.
func (g *Guard) KeepParams(method string) bool {
	return method == acp.AgentMethodSessionPrompt || method == acp.AgentMethodSessionSetModel
}

// ClientMsg observes client frames: prompts start turns; cancels are
// recorded and end pending waits.
func (g *Guard) ClientMsg(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	if g.cfg.Frames && g.on() {
		defer g.frame(c, transport.C2A, m, req, transport.Forward)
	}
	switch m.Kind {
	case transport.KindRequest:
		if m.Method == MethodRecovery && req != nil {
			return g.recoveryRequest(c, m, req)
		}
		if m.Method == acp.AgentMethodSessionPrompt && req != nil {
			g.supersede(c, req.SessionID)
			g.closeLate(c, req.SessionID)
			t := g.tracker.Start(req.SessionID, c.Now())
			p := &prompt{client: req, session: req.SessionID, params: req.Params, turn: t, first: t, state: stActive}
			req.Tag = p
			g.prompts[req] = p
			g.turnStarted(c, p)
			g.watch(c, p)
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
			g.cancelWaits(c, sid)
		}
	}
	return transport.Forward
}

// AgentMsg observes agent frames and settles prompt turns.
func (g *Guard) AgentMsg(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	v := g.agentMsg(c, m, req)
	if g.cfg.Frames && g.on() {
		g.frame(c, transport.A2C, m, req, v)
	}
	return v
}

func (g *Guard) agentMsg(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	switch m.Kind {
	case transport.KindInvalid:
		g.tracker.Unparseable()
		g.lateUnparseable(c)
	case transport.KindNotification:
		if m.Method == acp.ClientMethodSessionUpdate {
			suppress, parsed := g.tracker.ObserveParams(m.Params)
			if g.waiting > 0 {
				g.lateUpdate(c)
			}
			if g.probes > 0 {
				g.probeProgress(c)
			}
			if suppress {
				return transport.Drop
			}
			if g.cfg.Policy.Request.CompactThenRetry {
				return g.compactionUpdate(c, m, parsed && g.tracker.LastKind != observers.UpdateOther)
			}
		}
	case transport.KindRequest:
		if req != nil {
			g.tracker.Effect(req.SessionID, m.Method)
			g.lateRequest(c, req.SessionID)
		}
	case transport.KindResponse:
		return g.agentResponse(c, m, req)
	}
	return transport.Forward
}

// agentResponse learns from the answers to rare requests and settles
// session/prompt turns.
func (g *Guard) agentResponse(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	if req == nil {
		return transport.Forward
	}
	if v, ok := g.setupFailure(c, req, m); ok {
		return v
	}
	switch req.Method {
	case acp.AgentMethodInitialize:
		if info, ok := agentInfo(m.Result); ok {
			g.setAgentInfo(c, info)
		}
		if m.Error == nil && g.cfg.Policy.Recovers(g.cfg.Fallback) {
			// The client learns it can act on held prompts (operator.go).
			if line, ok := advertise(m); ok {
				c.Reply(req, line)
				return transport.Drop
			}
		}
	case acp.AgentMethodSessionNew, acp.AgentMethodSessionLoad, acp.AgentMethodSessionResume, acp.AgentMethodSessionFork:
		if sid := g.learnSession(req, m); sid != "" {
			return g.fallbackCheck(c, req, m, sid)
		}
	case acp.AgentMethodSessionSetConfigOption:
		g.learnConfigResult(req, m)
	case acp.AgentMethodSessionSetModel:
		if m.Error == nil {
			if model, ok := requestedModel(req.Params); ok {
				g.session(req.SessionID).currentModel = model
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
			return g.settle(c, p, m, &r, true)
		}
	}
	return transport.Forward
}

// ProxyResponse handles answers to the guard's own requests.
func (g *Guard) ProxyResponse(c transport.Ctl, m *transport.Msg, req *transport.Request) {
	r := parseReply(m)
	if g.cfg.Frames && g.on() {
		g.frame(c, transport.A2C, m, req, transport.Drop)
	}
	g.attemptDone(c, req, &r)
	switch tag := req.Tag.(type) {
	case *prompt:
		if reason, ok := r.refused(); ok && tag.last != nil && tag.state.retry() {
			// The retry never reached the agent: the client gets the
			// failure it was meant to recover from.
			g.stopWith(c, tag, onStop, reason, false)
			return
		}
		g.settle(c, tag, m, &r, false)
	case *modelSwitch:
		g.switched(c, tag, &r)
	case *compaction:
		g.compacted(c, tag, &r)
	}
}

// Stderr adds the line to open turns' evidence.
func (g *Guard) Stderr(c transport.Ctl, line string) { g.tracker.Stderr(line) }

// ClientClosed stops every pending timer: nobody is left to answer.
func (g *Guard) ClientClosed(c transport.Ctl) {
	g.closed = true
	for _, p := range g.prompts {
		p.stopTimer()
		p.hold.stopTimer()
	}
}

// AgentExit marks open turns and stops timers; pending prompts are then
// answered by the relay through ExitData.
func (g *Guard) AgentExit(c transport.Ctl, st transport.ExitStatus) {
	if g.on() {
		g.emit(AgentExited{EventBase: EventBase{At: c.Now(), Agent: g.adapter}, Status: st})
	}
	g.tracker.Exit()
	g.closeAllLate(c)
	for _, p := range g.prompts {
		p.stopTimer()
		p.hold.stopTimer()
	}
}

// ExitData adds a verdict on the agent's death to a pending prompt's error:
// the prompt moves to action_required (agent_exited) and the relay writes
// the answer with this data.
func (g *Guard) ExitData(c transport.Ctl, req *transport.Request, st transport.ExitStatus, base map[string]any) map[string]any {
	p, ok := req.Tag.(*prompt)
	if !ok {
		return g.launchFailure(c, req, st, base)
	}
	g.settleErrorLine(c, p.turn, "") // the text so far: a diagnostic error line, or output
	ev := classify.Evidence{
		Source:     classify.SourceExit,
		Adapter:    g.adapter,
		Stderr:     p.turn.Stderr(),
		Signal:     st.Signal,
		Phase:      "prompt",
		Generation: p.turn.Generation,
		Now:        c.Now(),
	}
	code := st.Code
	ev.ExitCode = &code
	if st.StartErr != nil {
		ev.Message = st.StartErr.Error()
	}
	if st.OutputClosed { // still running: no exit code, a lost transport
		ev.ExitCode, ev.Message = nil, transport.OutputClosedMessage
	}
	f := &failure{verdict: g.classify(ev), source: classify.SourceExit, turn: p.turn}
	held := p.state.waiting() && p.last != nil
	if held {
		// The agent died while the guard held the prompt for recovery: the
		// failure the client is owed is the one recovery was for.
		f = p.last
	}
	d := policy.Decision{Action: policy.ActionStop, Reason: ReasonAgentExited, Class: string(f.verdict.Class)}
	if !held {
		g.classified(c, p, f, d)
	}
	if !g.transit(c, p, step{on: onAgentExit, f: f, d: d}, nil) {
		return nil
	}
	pe := g.providerError(c, p, f, string(policy.ActionStop), ReasonAgentExited)
	base["providerError"] = pe
	g.respond(c, p, TurnReport{Outcome: OutcomeFailed, Error: &RPCError{Code: -32603, Message: "agent exited"}, ProviderError: &pe}, nil)
	return base
}

func (g *Guard) classify(ev classify.Evidence) classify.Verdict {
	if g.cfg.Engine == nil {
		return classify.Verdict{Code: "unclassified", Class: classify.ClassUnclassified, Confidence: "low", Scope: "unknown",
			SafeExcerpt: classify.Sanitize(ev.Message)}
	}
	return g.cfg.Engine.Classify(ev)
}

func (g *Guard) session(id string) *sessionInfo {
	s := g.sessions[id]
	if s == nil {
		s = &sessionInfo{}
		g.sessions[id] = s
	}
	return s
}
