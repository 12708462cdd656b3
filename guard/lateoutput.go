package guard

import (
	"encoding/json"
	"sort"
	"time"

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
// transcript ends — as LateOutput through Config.OnLate (replay --json
// puts it on the answered turn's line as "lateOutput"; telemetry counts
// it) and a log line. While the guard holds the failed turn for a retry,
// the same text is late activity (late.go) and stops the recovery too.

// LateOutput is the late output of one answered prompt.
type LateOutput struct {
	SessionID  string          `json:"sessionId"`
	RequestID  json.RawMessage `json:"requestId"`  // the answered prompt's id
	Generation int64           `json:"generation"` // its first generation (as in its TurnReport)
	Adapter    string          `json:"adapter,omitempty"`
	Chunks     int             `json:"chunks"` // non-blank message and thought chunks
	// At is when the window closed: the stamp of the event that closed it
	// (transport.Ctl.Now).
	At time.Time `json:"-"`
}

// answeredTurn is a session's latest answered prompt, whose turn may still
// receive late output.
type answeredTurn struct {
	turn       *observers.Turn
	requestID  json.RawMessage
	generation int64
}

// noteAnswered remembers p's last turn as its session's answered turn.
func (g *Guard) noteAnswered(p *prompt) {
	g.session(p.session).answered = &answeredTurn{
		turn: p.turn, requestID: append(json.RawMessage(nil), p.client.ID...), generation: p.first.Generation,
	}
}

// closeLate ends the late-output window of a session's answered prompt and
// reports what arrived in it.
func (g *Guard) closeLate(c transport.Ctl, sessionID string) {
	s := g.sessions[sessionID]
	if s == nil || s.answered == nil {
		return
	}
	a := s.answered
	s.answered = nil
	n := a.turn.Evidence.LateOutput
	if n == 0 {
		return
	}
	g.log.Warn("late output", "session", sessionID, "id", string(a.requestID), "chunks", n)
	if g.cfg.OnLate != nil {
		g.cfg.OnLate(LateOutput{SessionID: sessionID, RequestID: a.requestID, Generation: a.generation, Adapter: g.adapter, Chunks: n, At: c.Now()})
	}
}

// closeAllLate ends every session's late-output window, in session order.
func (g *Guard) closeAllLate(c transport.Ctl) {
	ids := make([]string, 0, len(g.sessions))
	for id, s := range g.sessions {
		if s.answered != nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		g.closeLate(c, id)
	}
}
