package guard

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/classify"
	evt "github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/policy"
)

// TestReportedShapesConvert: the shapes package event reports in have
// every field of the policy's decision and the classifier's verdict, and
// decisionOf and verdictOf copy them all (a filled value encodes alike).
func TestReportedShapesConvert(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[policy.Decision](), reflect.TypeFor[evt.Decision]()},
		{reflect.TypeFor[classify.Verdict](), reflect.TypeFor[evt.Verdict]()},
	} {
		from, to := pair[0], pair[1]
		if from.NumField() != to.NumField() {
			t.Errorf("%s has %d fields, %s %d", from, from.NumField(), to, to.NumField())
		}
		for i := range from.NumField() {
			f := from.Field(i)
			if g, ok := to.FieldByName(f.Name); !ok || g.Tag != f.Tag {
				t.Errorf("%s.%s (tag %q) has no twin in %s", from, f.Name, f.Tag, to)
			}
		}
	}
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	after := 3 * time.Second
	d := policy.Decision{Action: policy.ActionRetry, Delay: 2 * time.Second, DelayMs: 2000, Deadline: at, Attempt: 1, MaxRetries: 3, Class: "transient", Reason: "retry"}
	v := classify.Verdict{Code: "rate_limited", Class: classify.ClassTransient, Confidence: "high", Scope: "account", Rule: "x.y.v1",
		CatalogueVersion: "7", RetryAfter: &after, ResetAt: &at, SafeExcerpt: "slow down", Reason: "conflict", Conflicts: []string{"a", "b"}}
	for _, tt := range []struct {
		name     string
		from, to any
	}{
		{"decision", d, decisionOf(d)},
		{"verdict", v, verdictOf(v)},
	} {
		want, _ := json.Marshal(tt.from)
		got, _ := json.Marshal(tt.to)
		if string(got) != string(want) {
			t.Errorf("%s: converted encodes as\n%s\nwant\n%s", tt.name, got, want)
		}
	}
	if got := decisionOf(d); got.Delay != d.Delay {
		t.Errorf("decision lost its delay: %+v", got)
	}
	if got := verdictOf(v); got.RetryAfter != v.RetryAfter || got.ResetAt != v.ResetAt {
		t.Errorf("verdict lost its timing hints: %+v", got)
	}
}
