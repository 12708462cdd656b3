package pipeline

import (
	"log/slog"
	"maps"
	"os"
	"slices"

	"github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/presence"
)

// A live session's presence (package presence; `acp-guard console`): one
// record per session in the store its circuits use — the state
// directory's presence.json, or the NATS bucket acp_guard_presence —
// kept by a heartbeat under a lease, and changed from the guard's event
// stream. It exists only where a store is: with --circuits off or memory
// (or a policy that recovers nothing and no --circuits named) nothing is
// published and nothing runs.

// startPresence starts the publisher of a live session over st and
// returns the event subscriber that keeps its record, and the closer that
// stops it and deletes the record. holder is the session's circuit holder
// (host/pid/guard).
func startPresence(st *presence.Store, namespace, holder, agent string, log *slog.Logger) (func(event.Event), func() error, error) {
	host, _ := os.Hostname()
	p, err := presence.Start(presence.Config{Store: st, Namespace: namespace, Holder: holder,
		Host: host, PID: os.Getpid(), Agent: agent, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	t := &presenceTracker{p: p, prompts: map[string]string{}}
	return t.event, p.Close, nil
}

// presenceTracker follows the event stream for the record: the session's
// turn count, the prompts in flight and their states. Its methods run on
// the event loop, one event at a time; Update only touches memory.
type presenceTracker struct {
	p       *presence.Publisher
	prompts map[string]string // session + request id → the prompt's state
	last    string            // the prompt whose state changed last
	turn    int
	exited  bool
}

func (t *presenceTracker) event(e event.Event) {
	var b event.EventBase
	model, code, class := "", "", ""
	switch e := e.(type) {
	case event.TurnStarted:
		b, model = e.EventBase, e.Model
		t.turn++
		t.set(b, "active")
	case event.Transition:
		b = e.EventBase
		if _, ok := t.prompts[promptKey(b)]; ok && e.To != "answered" {
			t.set(b, e.To)
		}
	case event.Answered:
		b = e.EventBase
		delete(t.prompts, promptKey(b))
	case event.FailureClassified:
		b, model = e.EventBase, e.Model
		code, class = e.Verdict.Code, string(e.Verdict.Class)
	case event.AttemptSent:
		b, model = e.EventBase, e.Model
	case event.AgentExited:
		b = e.EventBase
		t.exited = true
	case event.AgentIdentified:
		b = e.EventBase
	default:
		return
	}
	state := t.state()
	t.p.Update(func(r *presence.Record) {
		if b.Agent != "" {
			r.Agent = b.Agent
		}
		if model != "" {
			r.Model = model
		}
		if b.SessionID != "" {
			r.SessionID = b.SessionID
		}
		if code != "" {
			r.Count(code, class, b.At)
		}
		r.Turn, r.InFlight, r.State = t.turn, len(t.prompts), state
	})
}

func (t *presenceTracker) set(b event.EventBase, state string) {
	k := promptKey(b)
	t.prompts[k] = state
	t.last = k
}

// state is the record's: a held or recovering prompt's state before a
// running one's (the last changed among them), prompting while any is in
// flight, else idle (starting before the first turn).
func (t *presenceTracker) state() string {
	switch {
	case t.exited:
		return presence.StateAgentExited
	case len(t.prompts) == 0 && t.turn == 0:
		return presence.StateStarting
	case len(t.prompts) == 0:
		return presence.StateIdle
	}
	if s := t.prompts[t.last]; s != "" && s != "active" {
		return s
	}
	for _, k := range slices.Sorted(maps.Keys(t.prompts)) {
		if s := t.prompts[k]; s != "active" {
			return s
		}
	}
	return presence.StatePrompting
}

func promptKey(b event.EventBase) string { return b.SessionID + "\x00" + string(b.RequestID) }
