package guard

import (
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/transport"
)

// The gate holds until dispatch. Between a failure and the dispatch of the
// work recovery scheduled (a retry, the attempt after a reset wait, a model
// switch), the turn is held: any evidence for its session — a non-blank
// message or thought chunk, a plan, a tool call or tool update, any
// agent→client request, an unparseable stdout line — means the agent is
// still working on it, so nothing may be sent again. The prompt moves to
// action_required (late_activity) and the client gets the ProviderError;
// the frames themselves are forwarded untouched.

// mark is the part of a turn's evidence that late activity changes.
type mark struct {
	output, thoughts                bool
	toolCalls, toolUpdates, effects int
}

func markOf(t *observers.Turn) mark {
	e := t.Evidence
	return mark{e.AssistantOutput, e.Thoughts, e.ToolCalls, e.ToolUpdates, e.Effects}
}

// lateFlags is late evidence the turn's own flags do not show.
type lateFlags struct {
	requests    bool // an agent→client request for the session
	unparseable bool // an unparseable stdout line
	updates     bool // a session/update that was evidence
}

func (l lateFlags) any() bool { return l.requests || l.unparseable || l.updates }

// lateUpdate checks, after a session/update was observed, whether it was
// evidence against a held turn. Cheap when nothing is held.
func (rc *recovery) lateUpdate(c transport.Ctl) {
	for _, p := range rc.m.held("", true) {
		if markOf(p.turn) != p.mark {
			p.late.updates = true
			rc.stopWith(c, p, onLate, ReasonLateActivity, false)
		}
	}
}

// lateRequest stops the held turns of the session an agent→client request
// names (of every session when it names none).
func (rc *recovery) lateRequest(c transport.Ctl, sessionID string) {
	for _, p := range rc.m.held(sessionID, sessionID == "") {
		p.late.requests = true
		rc.stopWith(c, p, onLate, ReasonLateActivity, false)
	}
}

// lateUnparseable stops every held turn: a line that is not JSON cannot be
// attributed to a session.
func (rc *recovery) lateUnparseable(c transport.Ctl) {
	for _, p := range rc.m.held("", true) {
		p.late.unparseable = true
		rc.stopWith(c, p, onLate, ReasonLateActivity, false)
	}
}
