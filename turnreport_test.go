package acpguard

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/policy"
)

// TestTurnReportConverts: the library's TurnReport and Decision have every
// field of the guard's and the policy's, and a report converted at the
// boundary encodes as the guard's did (the `replay --json` line).
func TestTurnReportConverts(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[guard.TurnReport](), reflect.TypeFor[TurnReport]()},
		{reflect.TypeFor[policy.Decision](), reflect.TypeFor[Decision]()},
		{reflect.TypeFor[guard.RPCError](), reflect.TypeFor[RPCError]()},
	} {
		from, to := pair[0], pair[1]
		if from.NumField() != to.NumField() {
			t.Errorf("%s has %d fields, %s %d", from, from.NumField(), to, to.NumField())
		}
		for i := range from.NumField() {
			f := from.Field(i)
			g, ok := to.FieldByName(f.Name)
			if !ok || g.Tag != f.Tag {
				t.Errorf("%s.%s (tag %q) has no twin in %s", from, f.Name, f.Tag, to)
			}
		}
	}
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	d := policy.Decision{Action: policy.ActionRetry, Delay: 2 * time.Second, DelayMs: 2000, Deadline: at, Attempt: 1, MaxRetries: 3, Class: "transient", Reason: "retry"}
	r := guard.TurnReport{SessionID: "s", RequestID: json.RawMessage(`7`), Generation: 2, Outcome: guard.OutcomeAnnotated, StopReason: "end_turn",
		Error: &guard.RPCError{Code: -32603, Message: "m"}, ProviderError: &guard.ProviderError{Code: "rate_limited"}, Decision: &d,
		Attempts: 2, Model: "m2", Suppressed: 1, Silent: "empty", AgentRetries: 3, LateOutput: 4, At: at}
	want, _ := json.Marshal(r)
	conv := turnReport(r)
	got, _ := json.Marshal(conv)
	if string(got) != string(want) {
		t.Errorf("converted report encodes as\n%s\nthe guard's as\n%s", got, want)
	}
	if conv.At != at || conv.Decision.Delay != d.Delay || conv.Outcome != OutcomeAnnotated {
		t.Errorf("converted report lost its unencoded fields: %+v", conv)
	}
	for g, o := range map[string]Outcome{guard.OutcomePassed: OutcomePassed, guard.OutcomeRewritten: OutcomeRewritten,
		guard.OutcomeAnnotated: OutcomeAnnotated, guard.OutcomeRetried: OutcomeRetried, guard.OutcomeFailed: OutcomeFailed} {
		if string(o) != g {
			t.Errorf("Outcome %q is the guard's %q", o, g)
		}
	}
}
