package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSilentMembers(t *testing.T) {
	const classes = `"transient":{"on_exhausted":"stop"},"hard":{"on_exhausted":"stop"}`
	d, err := Parse([]byte(`{"version":1,` + classes + `,"empty_turn":"error","stall_timeout_seconds":120}`))
	if err != nil || d.EmptyTurn != EmptyTurnError || d.StallTimeoutSeconds != 120 {
		t.Fatalf("got %+v, %v", d, err)
	}
	d, err = Parse([]byte(`{"version":1,` + classes + `}`))
	if err != nil || d.EmptyTurn != "" || d.StallTimeoutSeconds != 0 {
		t.Fatalf("defaults: got %+v, %v", d, err)
	}
	d, err = Parse([]byte(`{"version":1,"legacy":"stop","empty_turn":"pass","stall_timeout_seconds":5}`))
	if err != nil || d.EmptyTurn != EmptyTurnPass || d.StallTimeoutSeconds != 5 {
		t.Fatalf("legacy: got %+v, %v", d, err)
	}
	for doc, want := range map[string]string{
		`"empty_turn":"retry"`:          `empty_turn: must be "pass" or "error" (got "retry")`,
		`"empty_turn":1`:                `empty_turn: must be a string (got 1)`,
		`"stall_timeout_seconds":-1`:    `stall_timeout_seconds: must be 0 (off) to 86400 (got -1)`,
		`"stall_timeout_seconds":86401`: `stall_timeout_seconds: must be 0 (off) to 86400 (got 86401)`,
		`"stall_timeout_seconds":"2m"`:  `stall_timeout_seconds: must be an integer (got "2m")`,
	} {
		_, err := Parse([]byte(`{"version":1,` + classes + `,` + doc + `}`))
		var verr *ValidationError
		if !errors.As(err, &verr) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", doc, err, want)
		}
	}
}
