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
// session/cancel for the session, waits a grace period (the timeout, at
// most maxStallGrace), and then answers the client with a ProviderError
// agent_stalled (class unclassified: never recovered automatically). An
// answer the agent sends after the cancel changes nothing: the prompt is
// answered agent_stalled at once, and any later response for it is
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

// stallWatch is one prompt's watchdog state.
type stallWatch struct {
	stop  func() bool
	turn  *observers.Turn // the attempt whose frames are counted
	seen  uint32          // its frame count at the last check
	since time.Time       // when the count last changed (as of a check)
	fired bool            // the cancel went out; the grace period runs
	idle  time.Duration
	last  string
}

func (w *stallWatch) disarm() {
	if w.stop != nil {
		w.stop()
		w.stop = nil
	}
}

// watch arms the watchdog for a new prompt (when it is on).
func (g *Guard) watch(c transport.Ctl, p *prompt) {
	d := g.cfg.StallTimeout
	if d <= 0 {
		return
	}
	p.stall = stallWatch{turn: p.turn, seen: p.turn.Frames, since: c.Now()}
	p.stall.stop = c.After(d, func() { g.stallCheck(c, p) })
}

// stallCheck is the watchdog's timer: it re-arms while the agent is
// sending (or while the prompt is held), and sends the cancel once the
// agent sent nothing for the timeout.
func (g *Guard) stallCheck(c transport.Ctl, p *prompt) {
	w := &p.stall
	w.stop = nil
	if g.prompts[p.client] != p || g.closed || w.fired {
		return
	}
	d, now := g.cfg.StallTimeout, c.Now()
	running := p.state.running()
	if !running || w.turn != p.turn || p.turn.Frames != w.seen {
		w.turn, w.seen, w.since = p.turn, p.turn.Frames, now
		w.stop = c.After(d, func() { g.stallCheck(c, p) })
		return
	}
	if idle := now.Sub(w.since); idle < d {
		w.stop = c.After(d-idle, func() { g.stallCheck(c, p) })
		return
	}
	w.fired, w.idle, w.last = true, now.Sub(w.since), p.turn.LastFrame()
	sid, _ := json.Marshal(p.session)
	c.ToAgent([]byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":` + string(sid) + "}}\n"))
	g.tracker.Cancel(p.session) // the turn is cancelled now: never replayed
	g.log.Warn("agent stalled; session/cancel sent", "session", p.session, "id", string(p.client.ID),
		"idle", w.idle.String(), "last", w.last)
	w.stop = c.After(min(d, maxStallGrace), func() {
		w.stop = nil
		if g.prompts[p.client] == p && !g.closed {
			g.stalled(c, p)
		}
	})
}

// stalled answers p with agent_stalled (active | retrying --stall-->
// action_required).
func (g *Guard) stalled(c transport.Ctl, p *prompt) transport.Verdict {
	w := &p.stall
	msg := fmt.Sprintf("agent stalled: no frame from the agent for %s during the prompt (last: %s); session/cancel sent", w.idle.Round(time.Millisecond), w.last)
	v := classify.Verdict{
		Code: classify.CodeAgentStalled, Class: classify.ClassOf(classify.CodeAgentStalled), Confidence: "high",
		Scope: "agent", Rule: RuleStall, SafeExcerpt: msg,
	}
	if g.cfg.Engine != nil {
		v.CatalogueVersion = g.cfg.Engine.Version()
	}
	g.settleErrorLine(c, p.turn, "") // the text so far: a diagnostic error line, or output
	f := &failure{verdict: v, source: classify.SourceExit, rewrite: msg, turn: p.turn}
	d := policy.Decision{Action: policy.ActionStop, Reason: ReasonStalled, Class: string(v.Class)}
	if !g.transit(c, p, step{on: onStall, f: f, d: d}, nil) {
		return transport.Drop
	}
	return g.answerFailure(c, p, f, d, false)
}
