package guard

import (
	"encoding/json"
	"time"

	"github.com/acp-guard/acp-guard/policy"
)

// Outcomes of a prompt turn (the "outcome" of a `replay --json` line).
const (
	OutcomePassed    = "passed"
	OutcomeRewritten = "rewritten"
	OutcomeAnnotated = "annotated"
	OutcomeRetried   = "retried"
	OutcomeFailed    = "failed"
)

// RPCError is a JSON-RPC error's code and message.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// TurnReport is one line of `acp-guard replay --json`: how a client prompt
// turn ended.
type TurnReport struct {
	SessionID     string           `json:"sessionId"`
	RequestID     json.RawMessage  `json:"requestId"`
	Generation    int64            `json:"generation"`
	Outcome       string           `json:"outcome"`
	StopReason    string           `json:"stopReason,omitempty"`
	Error         *RPCError        `json:"error,omitempty"`
	ProviderError *ProviderError   `json:"providerError,omitempty"`
	Decision      *policy.Decision `json:"decision,omitempty"`
	Attempts      int              `json:"attempts,omitempty"`
	Model         string           `json:"model,omitempty"` // the fallback model switched to, if any
	Suppressed    int              `json:"suppressed"`
	Silent        string           `json:"silent,omitempty"` // the kind a success was flagged with (SilentEmpty, SilentTruncated, SilentRepeated)
	// AgentRetries counts the agent's own visible retries over the
	// prompt's attempts: its retry notes, re-streamed answers, the retries
	// it stated in its error (observers.Turn.AgentRetries).
	AgentRetries int `json:"agentRetries,omitempty"`
	// LateOutput counts the text chunks for the session that arrived after
	// this answer and before the session's next prompt (LateOutput). The
	// guard reports it later, through Config.OnLate; replay puts it here.
	LateOutput int `json:"lateOutput,omitempty"`
	// At is when the turn settled: the stamp of the event that answered it
	// (transport.Ctl.Now). Not part of the report line.
	At time.Time `json:"-"`
}

// report reports how p's turn ended (Answered), once.
func (ev *emitter) report(p *prompt, r TurnReport) {
	if p.reported {
		return
	}
	p.reported = true
	r.SessionID = p.session
	r.RequestID = json.RawMessage(append([]byte(nil), p.client.ID...))
	r.Generation = p.first.Generation
	r.Suppressed = p.suppressed
	if p.attempt > 0 {
		r.Attempts = p.attempt + 1
	}
	r.Model = p.model
	r.AgentRetries = p.agentRetries + p.turn.AgentRetries()
	if r.Decision == nil && len(p.decisions) > 0 {
		d := p.decisions[len(p.decisions)-1]
		r.Decision = &d
	}
	if ev.on() {
		ev.emit(Answered{
			EventBase: EventBase{At: r.At, Agent: ev.ag.adapter, SessionID: p.session, RequestID: p.client.ID},
			Report:    r, Duration: r.At.Sub(p.client.At),
		})
	}
}
