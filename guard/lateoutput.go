package guard

import (
	"encoding/json"
	"sort"

	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/transport"
)

// Late output. Text for a session (a non-blank message or thought chunk)
// that arrives after its prompt was answered and before the session's
// next prompt belongs to no prompt: some agents end the turn while they
// are still retrying, and the real answer follows seconds later. It is
// forwarded untouched, never counted in the next turn (the observers keep
// it on the answered turn, which stays the session's active turn until
// the next prompt starts), and reported when its window closes — at the
// session's next prompt, at the agent's exit, or when a replayed
// transcript ends — as a LateOutput event (replay --json puts it on the
// answered turn's line as "lateOutput"; telemetry counts it; the decision
// log warns). While the guard holds the failed turn for a retry, the same
// text is late activity (late.go) and stops the recovery too.

// Lates returns a subscriber that passes each LateOutput event to fn.
func Lates(fn func(LateOutput)) func(Event) {
	return func(e Event) {
		if l, ok := e.(LateOutput); ok {
			fn(l)
		}
	}
}

// answeredTurn is a session's latest answered prompt, whose turn may still
// receive late output.
type answeredTurn struct {
	turn       *observers.Turn
	requestID  json.RawMessage
	generation int64
}

// noteAnswered remembers p's last turn as its session's answered turn.
func (a *agent) noteAnswered(p *prompt) {
	a.session(p.session).answered = &answeredTurn{
		turn: p.turn, requestID: append(json.RawMessage(nil), p.client.ID...), generation: p.first.Generation,
	}
}

// closeLate ends the late-output window of a session's answered prompt and
// reports what arrived in it.
func (a *agent) closeLate(c transport.Ctl, sessionID string) {
	s := a.sessions[sessionID]
	if s == nil || s.answered == nil {
		return
	}
	t := s.answered
	s.answered = nil
	n := t.turn.Evidence.LateOutput
	if n == 0 {
		return
	}
	if a.ev.on() {
		a.ev.emit(LateOutput{EventBase: EventBase{At: c.Now(), Agent: a.adapter, SessionID: sessionID, RequestID: t.requestID},
			Generation: t.generation, Chunks: n})
	}
}

// closeAllLate ends every session's late-output window, in session order.
func (a *agent) closeAllLate(c transport.Ctl) {
	ids := make([]string, 0, len(a.sessions))
	for id, s := range a.sessions {
		if s.answered != nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		a.closeLate(c, id)
	}
}
