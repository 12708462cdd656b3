package guard

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// The stall watchdog (opt-in: Config.StallTimeout, --stall-timeout or the
// policy's stall_timeout_seconds). When an open session/prompt gets no
// frame from the agent for its session for the timeout, the guard sends
// session/cancel for the session (running --stall--> stalled), waits a
// grace period (the timeout, at most maxStallGrace), and then answers the client with a ProviderError
// agent_stalled (class unclassified: never recovered automatically;
// stalled --give_up--> action_required). An answer the agent sends after
// the cancel changes nothing: the prompt gives up at once, and any later response for it is
// dropped and counted by the relay (transport: the exactly-once table).
//
// The watchdog costs the relay nothing per frame beyond the turn's frame
// counter (observers.Turn.Frames): a timer per prompt compares the count
// at each check, so a stall is seen between one and two timeouts after
// the last frame. While the prompt is held (waiting for a retry or a
// switch) nothing is expected from the agent and the clock restarts.
// The timer runs on the relay's event loop (transport.Ctl.After) and is
// owned by the prompt: respond disarms it.

// maxStallGrace bounds the grace period after the watchdog's cancel.
const maxStallGrace = 5 * time.Second

// ReasonStalled is recovery.reason of an agent_stalled answer.
const ReasonStalled = "agent_stalled"

// watchdog is the stall watchdog: a timer per prompt, armed under the
// prompt's fence (fence.go) until it is answered.
type watchdog struct {
	timeout time.Duration // Config.StallTimeout; 0: off
	m       *machine
	rc      *recovery
	checks  *checks
	ev      *emitter
	tracker *observers.Tracker
}

// stallWatch is one prompt's watchdog measure. Whether its cancel went
// out is the prompt's state (stalled), not a flag here.
type stallWatch struct {
	stop  func() bool
	turn  *observers.Turn // the attempt whose frames are counted
	seen  uint32          // its frame count at the last check
	since time.Time       // when the count last changed (as of a check)
	idle  time.Duration   // how long the agent had sent nothing when the cancel went out
	last  string          // the last frame before the cancel
}

func (w *stallWatch) disarm() {
	if w.stop != nil {
		w.stop()
		w.stop = nil
	}
}

// stalled reports whether the watchdog's cancel went out for the prompt.
func (w *stallWatch) stalled() bool { return w.idle > 0 } // idle is at least the timeout then

// watch arms the watchdog for a new prompt (when it is on).
func (wd *watchdog) watch(c transport.Ctl, p *prompt) {
	if wd.timeout <= 0 {
		return
	}
	p.stall = stallWatch{turn: p.turn, seen: p.turn.Frames, since: c.Now()}
	wd.arm(c, p, wd.timeout)
}

// arm runs the next check after d, under p's fence until it is answered:
// the watchdog follows the prompt across its states.
func (wd *watchdog) arm(c transport.Ctl, p *prompt, d time.Duration) {
	p.stall.stop = c.After(d, wd.m.promptFence(p).then(func() { wd.check(c, p) }))
}

// check is the watchdog's timer: it re-arms while the agent is sending
// (or while the prompt is held), and sends the cancel once the agent
// sent nothing for the timeout (running --stall--> stalled).
func (wd *watchdog) check(c transport.Ctl, p *prompt) {
	w := &p.stall
	w.stop = nil
	d, now := wd.timeout, c.Now()
	if !p.state.running() || w.turn != p.turn || p.turn.Frames != w.seen {
		w.turn, w.seen, w.since = p.turn, p.turn.Frames, now
		wd.arm(c, p, d)
		return
	}
	if idle := now.Sub(w.since); idle < d {
		wd.arm(c, p, d-idle)
		return
	}
	w.idle, w.last = now.Sub(w.since), p.turn.LastFrame()
	sid, _ := json.Marshal(p.session)
	c.ToAgent([]byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":` + string(sid) + "}}\n"))
	wd.tracker.Cancel(p.session) // the turn is cancelled now: never replayed
	if wd.ev.on() {
		wd.ev.emit(Stalled{EventBase: wd.ev.base(c, p), Idle: w.idle, LastFrame: w.last})
	}
	if !wd.m.transit(c, p, step{on: onStall}, nil) {
		return
	}
	// The grace period: its end is an event of the stalled state.
	w.stop = c.After(min(d, maxStallGrace), wd.m.fence(p).then(func() {
		w.stop = nil
		wd.giveUp(c, p)
	}))
}

// giveUp answers a stalled prompt with agent_stalled (stalled --give_up-->
// action_required): its grace period ended, or the agent answered after
// the cancel.
func (wd *watchdog) giveUp(c transport.Ctl, p *prompt) transport.Verdict {
	w := &p.stall
	msg := fmt.Sprintf("agent stalled: no frame from the agent for %s during the prompt (last: %s); session/cancel sent", w.idle.Round(time.Millisecond), w.last)
	v := classify.Verdict{
		Code: classify.CodeAgentStalled, Class: classify.ClassOf(classify.CodeAgentStalled), Confidence: "high",
		Scope: "agent", Rule: RuleStall, SafeExcerpt: msg,
	}
	wd.checks.catalogueVersion(&v)
	wd.checks.settleErrorLine(c, p.turn, "") // the text so far: a diagnostic error line, or output
	f := &failure{verdict: v, source: classify.SourceExit, rewrite: msg, turn: p.turn}
	d := policy.Decision{Action: policy.ActionStop, Reason: ReasonStalled, Class: string(v.Class)}
	wd.ev.classified(c, p, f, d)
	if !wd.m.transit(c, p, step{on: onGiveUp, f: f, d: d}, nil) {
		return transport.Drop
	}
	return wd.rc.answerFailure(c, p, f, d, false)
}
