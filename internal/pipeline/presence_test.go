package pipeline

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/presence"
)

// The presence record follows the event stream: starting, a turn in
// flight (prompting), held (the prompt's state), its error counted,
// idle once answered, the model as the agent said it; a held prompt
// shows before another one merely running.
func TestPresenceTracksEvents(t *testing.T) {
	st := presence.NewMemoryStore()
	defer st.Close()
	p, err := presence.Start(presence.Config{Store: st, Holder: "h/1/1", Every: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tr := &presenceTracker{p: p, prompts: map[string]string{}}
	at := time.Now().UTC() // the record keeps errors of the last Window before the wall clock: a fixed date ages out
	base := func(session, id string) event.EventBase {
		return event.EventBase{At: at, Agent: "codex-acp", SessionID: session, RequestID: json.RawMessage(id)}
	}
	check := func(what, state string, turn, inFlight int) {
		t.Helper()
		r := p.Snapshot()
		if r.State != state || r.Turn != turn || r.InFlight != inFlight {
			t.Errorf("%s: state %q turn %d in flight %d, want %q %d %d", what, r.State, r.Turn, r.InFlight, state, turn, inFlight)
		}
	}
	check("at start", presence.StateStarting, 0, 0)
	tr.event(event.TurnStarted{EventBase: base("s1", "3"), Model: "gpt-5"})
	check("a turn", presence.StatePrompting, 1, 1)
	tr.event(event.FailureClassified{EventBase: base("s1", "3"), Verdict: event.Verdict{Code: "provider_overloaded", Class: string(classify.ClassTransient)}})
	tr.event(event.Transition{EventBase: base("s1", "3"), From: "active", On: "retry", To: "retry_wait"})
	check("held", "retry_wait", 1, 1)
	tr.event(event.TurnStarted{EventBase: base("s2", "4")})
	check("held beside a running one", "retry_wait", 2, 2)
	tr.event(event.Transition{EventBase: base("s1", "3"), From: "retry_wait", On: "due", To: "retrying"})
	tr.event(event.Transition{EventBase: base("s1", "3"), From: "retrying", On: "succeed", To: "answered"})
	tr.event(event.Answered{EventBase: base("s1", "3")})
	check("one answered", presence.StatePrompting, 2, 1)
	tr.event(event.Answered{EventBase: base("s2", "4")})
	check("both answered", presence.StateIdle, 2, 0)
	r := p.Snapshot()
	if r.Agent != "codex-acp" || r.Model != "gpt-5" || r.SessionID != "s2" ||
		len(r.Errors) != 1 || r.Errors[0].Code != "provider_overloaded" || r.Errors[0].N != 1 {
		t.Errorf("record %+v", r)
	}
	tr.event(event.AgentExited{EventBase: base("", "")})
	check("agent gone", presence.StateAgentExited, 2, 0)
}
