package guard

import (
	"slices"
	"testing"

	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/policy"
)

// TestStateAndEventRows: every state and every event has its row — a
// name of its own — and takes part in the transition table; the held
// board's list of actionable states is the guard's.
func TestStateAndEventRows(t *testing.T) {
	seen := map[string]bool{}
	reached := map[state]bool{stActive: true} // where every prompt starts
	usedOn := map[event]bool{}
	for _, e := range transitions {
		reached[e.to], reached[e.from] = true, true
		usedOn[e.on] = true
	}
	for s := state(0); s < nStates; s++ {
		name := states[s].name
		if name == "" || seen[name] {
			t.Errorf("state %d has no row of its own in states (name %q)", s, name)
		}
		seen[name] = true
		if !reached[s] {
			t.Errorf("state %s is in no transition", s)
		}
		if got := DescribeState(name); !got.Known || got.Actionable != s.actionable() || got.Retry != s.retry() || got.Terminal != s.terminal() {
			t.Errorf("DescribeState(%q) = %+v, not the row's traits", name, got)
		}
		if held.Actionable(name) != s.actionable() {
			t.Errorf("held.Actionable(%q) = %v, the guard's row says %v", name, held.Actionable(name), s.actionable())
		}
	}
	if DescribeState("no_such_state").Known {
		t.Error("DescribeState knows a state that is not one")
	}
	for e := event(0); e < nEvents; e++ {
		name := events[e].name
		if name == "" || seen[name+"/event"] {
			t.Errorf("event %d has no row of its own in events (name %q)", e, name)
		}
		seen[name+"/event"] = true
		if !usedOn[e] {
			t.Errorf("event %s moves no prompt in the transition table", e)
		}
	}
}

// TestEveryActionHasARow: every policy action has its row in
// recoveryActions, and the row is whole — its event leaves a running
// attempt, work that starts once its record is durable, words for the
// notice it announces.
func TestEveryActionHasARow(t *testing.T) {
	for _, a := range policy.Actions {
		d, ok := recoveryActions[a]
		if !ok {
			t.Errorf("policy action %q has no row in recoveryActions", a)
			continue
		}
		checkActionRow(t, a, d)
	}
	for a := range recoveryActions {
		if !slices.Contains(policy.Actions, a) {
			t.Errorf("recoveryActions has a row for %q, which is not in policy.Actions", a)
		}
	}
	if got := actionOf("no_such_action").on; got != onStop {
		t.Errorf("an action without a row moves on %s, want stop", got)
	}
	if got := recoveryAction(ReasonCompactionEmpty); got != string(policy.ActionCompact) {
		t.Errorf("recoveryAction(%q) = %q, want compact", ReasonCompactionEmpty, got)
	}
	if got := recoveryAction(ReasonNoFallback); got != string(policy.ActionStop) {
		t.Errorf("recoveryAction(%q) = %q, want stop", ReasonNoFallback, got)
	}
}

// checkActionRow checks that a's row is whole: its event leaves a running
// attempt, work that starts once its record is durable, words for the
// notice it announces.
func checkActionRow(t *testing.T, a policy.Action, d actionDesc) {
	t.Helper()
	for _, from := range []state{stActive, stRetrying, stProbing} {
		e, ok := lookupEdge(from, d.on)
		if !ok {
			t.Errorf("action %q: no transition %s --%s-->", a, from, d.on)
			continue
		}
		if e.schedules != (d.start != nil) {
			t.Errorf("action %q: transition %s --%s--> schedules=%v, but the row's work is set=%v", a, from, d.on, e.schedules, d.start != nil)
		}
	}
	if (d.notice == "") != (d.words == nil) {
		t.Errorf("action %q: a notice needs its words (notice %q)", a, d.notice)
	}
	if d.start == nil && a != policy.ActionStop {
		t.Errorf("action %q has no work: only stop answers at once", a)
	}
}
