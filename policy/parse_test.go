package policy

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// example is the document of the package doc (policy/doc.go).
const example = `{"version":1,
 "transient":{"retry":{"enabled":true,"max_retries":3,"initial_interval_seconds":5},
              "wait_for_reset":{"enabled":true,"max_wait_seconds":300},
              "on_exhausted":"skip"},
 "hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},
         "wait_for_reset":{"enabled":false,"max_wait_seconds":0},
         "on_exhausted":"stop"},
 "fallback_models":["model-b","model-c"]}`

func exampleDoc() Document {
	return Document{
		Version: 1,
		Transient: ClassPolicy{
			Retry:        Retry{Enabled: true, MaxRetries: 3, InitialIntervalSeconds: 5},
			WaitForReset: WaitForReset{Enabled: true, MaxWaitSeconds: 300},
			OnExhausted:  OutcomeSkip,
		},
		Hard:           ClassPolicy{OnExhausted: OutcomeStop},
		FallbackModels: []string{"model-b", "model-c"},
	}
}

func TestParseValid(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want Document
	}{
		{"design example", example, exampleDoc()},
		{"sections omitted mean disabled",
			`{"version":1,"transient":{"on_exhausted":"skip"},"hard":{"on_exhausted":"stop"}}`,
			Document{Version: 1, Transient: ClassPolicy{OnExhausted: OutcomeSkip}, Hard: ClassPolicy{OnExhausted: OutcomeStop}}},
		{"limits inclusive",
			`{"version":1,
			  "transient":{"retry":{"enabled":true,"max_retries":10,"initial_interval_seconds":3600},"wait_for_reset":{"enabled":true,"max_wait_seconds":604800},"on_exhausted":"stop"},
			  "hard":{"retry":{"enabled":true,"max_retries":1,"initial_interval_seconds":1},"wait_for_reset":{"enabled":true,"max_wait_seconds":1},"on_exhausted":"skip"}}`,
			Document{Version: 1,
				Transient: ClassPolicy{Retry: Retry{true, 10, 3600}, WaitForReset: WaitForReset{true, 604800}, OnExhausted: OutcomeStop},
				Hard:      ClassPolicy{Retry: Retry{true, 1, 1}, WaitForReset: WaitForReset{true, 1}, OnExhausted: OutcomeSkip}}},
		{"empty fallback list", `{"version":1,"transient":{"on_exhausted":"skip"},"hard":{"on_exhausted":"skip"},"fallback_models":[]}`, Default()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: got error %v, want nil", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse: got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Omitted parts of a document take the defaults (immediate skip,
// retry and waiting disabled, version 1).
func TestParseOmittedSectionsTakeSeedDefaults(t *testing.T) {
	retry3 := ClassPolicy{Retry: Retry{Enabled: true, MaxRetries: 3, InitialIntervalSeconds: 5}, OnExhausted: OutcomeSkip}
	skip := Default().Transient
	for _, tt := range []struct {
		name string
		in   string
		want Document
	}{
		{"empty object", `{}`, Default()},
		{"only the version", `{"version":1}`, Default()},
		{"retry transient 3x, nothing else", `{"transient":{"retry":{"max_retries":3,"initial_interval_seconds":5}}}`,
			Document{Version: 1, Transient: retry3, Hard: skip}},
		{"hard stops, transient default", `{"hard":{"on_exhausted":"stop"}}`,
			Document{Version: 1, Transient: skip, Hard: ClassPolicy{OnExhausted: OutcomeStop}}},
		{"empty sections are disabled", `{"transient":{"retry":{},"wait_for_reset":{}}}`, Default()},
		{"wait without enabled", `{"hard":{"wait_for_reset":{"max_wait_seconds":60},"on_exhausted":"stop"}}`,
			Document{Version: 1, Transient: skip, Hard: ClassPolicy{WaitForReset: WaitForReset{Enabled: true, MaxWaitSeconds: 60}, OnExhausted: OutcomeStop}}},
		{"legacy object without version", `{"legacy":"stop"}`,
			Document{Version: 1, Transient: ClassPolicy{OnExhausted: OutcomeStop}, Hard: ClassPolicy{OnExhausted: OutcomeStop}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse(%s): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%s):\ngot  %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

// TestParseInvalid checks the field-addressed errors, all of them, in order.
func TestParseInvalid(t *testing.T) {
	const hardOK = `"hard":{"on_exhausted":"stop"}`
	for _, tt := range []struct {
		name string
		in   string
		want []string
	}{
		{"retry enabled with zero budget",
			`{"version":1,"transient":{"retry":{"enabled":true,"max_retries":0,"initial_interval_seconds":5},"on_exhausted":"skip"},` + hardOK + `}`,
			[]string{"transient.retry.max_retries: must be 1–10 when retry is enabled (got 0)"}},
		{"retry above limits",
			`{"version":1,"transient":{"retry":{"enabled":true,"max_retries":11,"initial_interval_seconds":3601},"on_exhausted":"skip"},` + hardOK + `}`,
			[]string{
				"transient.retry.max_retries: must be 1–10 when retry is enabled (got 11)",
				"transient.retry.initial_interval_seconds: must be 1–3600 when retry is enabled (got 3601)",
			}},
		{"negative values",
			`{"version":1,"transient":{"retry":{"enabled":true,"max_retries":-1,"initial_interval_seconds":-5},"on_exhausted":"skip"},` + hardOK + `}`,
			[]string{
				"transient.retry.max_retries: must be 1–10 when retry is enabled (got -1)",
				"transient.retry.initial_interval_seconds: must be 1–3600 when retry is enabled (got -5)",
			}},
		{"disabled sections store zeros",
			`{"version":1,"transient":{"on_exhausted":"skip"},"hard":{"retry":{"enabled":false,"max_retries":3,"initial_interval_seconds":5},"wait_for_reset":{"enabled":false,"max_wait_seconds":60},"on_exhausted":"stop"}}`,
			[]string{
				"hard.retry.max_retries: must be 0 when retry is disabled (got 3)",
				"hard.retry.initial_interval_seconds: must be 0 when retry is disabled (got 5)",
				"hard.wait_for_reset.max_wait_seconds: must be 0 when wait_for_reset is disabled (got 60)",
			}},
		{"wait above seven days",
			`{"version":1,"transient":{"wait_for_reset":{"enabled":true,"max_wait_seconds":604801},"on_exhausted":"skip"},` + hardOK + `}`,
			[]string{"transient.wait_for_reset.max_wait_seconds: must be 1–604800 when wait_for_reset is enabled (got 604801)"}},
		{"wait enabled with zero",
			`{"version":1,"transient":{"on_exhausted":"skip"},"hard":{"wait_for_reset":{"enabled":true},"on_exhausted":"stop"}}`,
			[]string{"hard.wait_for_reset.max_wait_seconds: must be 1–604800 when wait_for_reset is enabled (got 0)"}},
		{"unknown outcome",
			`{"version":1,"transient":{"on_exhausted":"retry"},` + hardOK + `}`,
			[]string{`transient.on_exhausted: must be "skip" or "stop" (got "retry")`}},
		{"unsupported version",
			`{"version":2,"transient":{"on_exhausted":"skip"},` + hardOK + `}`,
			[]string{"version: unsupported version 2 (want 1)"}},
		{"unknown class keys",
			`{"version":1,"transient":{"on_exhausted":"skip"},` + hardOK + `,"request":{"on_exhausted":"skip"},"unclassified":{}}`,
			[]string{
				"request.on_exhausted: unknown field (want compact_then_retry)",
				"unclassified: unknown class: only transient and hard are configurable (unclassified failures always stop)",
			}},
		{"request section: not an object, a bad flag",
			`{"version":1,"transient":{"on_exhausted":"skip"},` + hardOK + `,"request":{"compact_then_retry":"yes"}}`,
			[]string{"request.compact_then_retry: must be true or false (got \"yes\")"}},
		{"unknown fields at every level",
			`{"version":1,"transient":{"retry":{"enabled":false,"max":1},"wait_for_reset":{"enabled":false,"seconds":1},"on_exhausted":"skip","mode":"x"},` + hardOK + `,"extra":true}`,
			[]string{
				"transient.retry.max: unknown field (want enabled, max_retries or initial_interval_seconds)",
				"transient.wait_for_reset.seconds: unknown field (want enabled or max_wait_seconds)",
				"transient.mode: unknown field (want retry, wait_for_reset or on_exhausted)",
				"extra: unknown field (want version, transient, hard, codes, request, fallback_models, empty_turn, stall_timeout_seconds, honour_hint_up_to_seconds or legacy)",
			}},
		{"wrong types",
			`{"version":"1","transient":{"retry":{"enabled":"yes","max_retries":1.5,"initial_interval_seconds":null},"on_exhausted":7},"hard":[]}`,
			[]string{
				`version: must be an integer (got "1")`,
				`transient.retry.enabled: must be true or false (got "yes")`,
				"transient.retry.max_retries: must be an integer (got 1.5)",
				"transient.retry.initial_interval_seconds: must be an integer (got null)",
				"transient.on_exhausted: must be a string (got 7)",
				"hard: must be an object (got [])",
			}},
		{"retry without enabled is enabled, and needs its interval",
			`{"version":1,"transient":{"retry":{"max_retries":3},"on_exhausted":"skip"},` + hardOK + `}`,
			[]string{"transient.retry.initial_interval_seconds: must be 1–3600 when retry is enabled (got 0)"}},
		{"duplicate keys",
			`{"version":1,"version":1,"transient":{"on_exhausted":"skip","on_exhausted":"stop"},` + hardOK + `}`,
			[]string{
				"version: duplicate field",
				"transient.on_exhausted: duplicate field",
			}},
		{"fallback models",
			`{"version":1,"transient":{"on_exhausted":"skip"},` + hardOK + `,"fallback_models":["a","","a"," ",3,"b\u0007"]}`,
			[]string{
				"fallback_models[1]: must not be empty",
				`fallback_models[2]: duplicate of fallback_models[0] ("a")`,
				"fallback_models[3]: must not be empty",
				"fallback_models[4]: must be a string (got 3)",
				"fallback_models[5]: must not contain control characters",
			}},
		{"fallback models not a list",
			`{"version":1,"transient":{"on_exhausted":"skip"},` + hardOK + `,"fallback_models":"a,b"}`,
			[]string{`fallback_models: must be an array of model names (got "a,b")`}},
		{"long bad value is cut short",
			`{"version":1,"transient":{"retry":{"enabled":true,"max_retries":"` + strings.Repeat("x", 60) + `","initial_interval_seconds":1},"on_exhausted":"skip"},` + hardOK + `}`,
			[]string{`transient.retry.max_retries: must be an integer (got "` + strings.Repeat("x", 39) + `…)`}},
		{"not an object", `[1,2]`, []string{"(document): must be an object (got [1,2])"}},
		{"unknown legacy string", `"retry_forever"`,
			[]string{`legacy: must be "retry_same", "try_next" or "stop" (got "retry_forever")`}},
		{"unknown legacy object", `{"version":1,"legacy":"again"}`,
			[]string{`legacy: must be "retry_same", "try_next" or "stop" (got "again")`}},
		{"legacy mixed with classes", `{"version":1,"legacy":"stop","transient":{"on_exhausted":"skip"}}`,
			[]string{"legacy: cannot be combined with transient or hard"}},
		{"legacy not a string", `{"version":1,"legacy":1}`,
			[]string{"legacy: must be a string (got 1)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse: got %+v, nil error; want errors %q", doc, tt.want)
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Parse: got error %T %v, want *ValidationError", err, err)
			}
			var got []string
			for _, fe := range verr.Errors {
				got = append(got, fe.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse errors:\ngot  %q\nwant %q", got, tt.want)
			}
			if err.Error() != strings.Join(tt.want, "\n") {
				t.Errorf("Error(): got %q, want the errors joined by newlines", err.Error())
			}
			if !reflect.DeepEqual(doc, Document{}) {
				t.Errorf("Parse: got document %+v with an error, want the zero Document", doc)
			}
		})
	}
}

func TestFieldErrorAs(t *testing.T) {
	_, err := Parse([]byte(`{"version":1,"transient":{"on_exhausted":"skip"},"hard":{"on_exhausted":"later"}}`))
	var fe FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("errors.As(%v, *FieldError): got false, want true", err)
	}
	if fe.Field != "hard.on_exhausted" {
		t.Errorf("Field: got %q, want %q", fe.Field, "hard.on_exhausted")
	}
}

func TestParseSyntax(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"empty", "", "policy: empty document"},
		{"blank", " \n ", "policy: empty document"},
		{"bad token on line 2", "{\"version\":1,\n \"hard\": x}", "policy: line 2, column 10: invalid character 'x' looking for beginning of value"},
		{"truncated", `{"version":1`, "policy: unexpected EOF"},
		{"trailing data", "{\"version\":1}\n{}", "policy: line 2, column 1: unexpected data after the document"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse(%q): got error %v, want %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestLegacy(t *testing.T) {
	try := ClassPolicy{OnExhausted: OutcomeSkip}
	stop := ClassPolicy{OnExhausted: OutcomeStop}
	same := ClassPolicy{Retry: Retry{Enabled: true, MaxRetries: 1, InitialIntervalSeconds: 5}, OnExhausted: OutcomeStop}
	for _, tt := range []struct {
		in   string
		want Document
	}{
		{`"try_next"`, Document{Version: 1, Transient: try, Hard: try}},
		{`"stop"`, Document{Version: 1, Transient: stop, Hard: stop}},
		{` "retry_same" `, Document{Version: 1, Transient: same, Hard: same}},
		{`{"version":1,"legacy":"retry_same"}`, Document{Version: 1, Transient: same, Hard: same}},
		{`{"legacy":"try_next","version":1,"fallback_models":["m2"]}`, Document{Version: 1, Transient: try, Hard: try, FallbackModels: []string{"m2"}}},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: got error %v, want nil", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse: got %+v, want %+v", got, tt.want)
			}
			// The normalized form is a version 1 document with no legacy key.
			norm := got.Normalized()
			if strings.Contains(string(norm), "legacy") {
				t.Errorf("Normalized: got %s, want no legacy key", norm)
			}
			again, err := Parse(norm)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("Parse(Normalized()): got %+v, %v; want %+v, nil", again, err, got)
			}
		})
	}
	if _, err := FromLegacy("per_code"); err == nil {
		t.Errorf("FromLegacy(per_code): got nil error, want an error")
	}
}

func TestDefault(t *testing.T) {
	d := Default()
	want := Document{Version: 1, Transient: ClassPolicy{OnExhausted: OutcomeSkip}, Hard: ClassPolicy{OnExhausted: OutcomeSkip}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Default: got %+v, want %+v", d, want)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("Default().Validate: got %v, want nil", err)
	}
	const norm = `{
  "version": 1,
  "transient": {
    "retry": {
      "enabled": false,
      "max_retries": 0,
      "initial_interval_seconds": 0
    },
    "wait_for_reset": {
      "enabled": false,
      "max_wait_seconds": 0
    },
    "on_exhausted": "skip"
  },
  "hard": {
    "retry": {
      "enabled": false,
      "max_retries": 0,
      "initial_interval_seconds": 0
    },
    "wait_for_reset": {
      "enabled": false,
      "max_wait_seconds": 0
    },
    "on_exhausted": "skip"
  }
}
`
	if got := string(d.Normalized()); got != norm {
		t.Errorf("Default().Normalized():\ngot  %s\nwant %s", got, norm)
	}
}

func TestNormalizedRoundTrip(t *testing.T) {
	d := exampleDoc()
	got, err := Parse(d.Normalized())
	if err != nil {
		t.Fatalf("Parse(Normalized()): got error %v", err)
	}
	if !reflect.DeepEqual(got, d) {
		t.Errorf("Parse(Normalized()): got %+v, want %+v", got, d)
	}
}

func TestValidateBuiltDocument(t *testing.T) {
	d := exampleDoc()
	d.Transient.OnExhausted = ""
	d.FallbackModels = append(d.FallbackModels, "model-b")
	err := d.Validate()
	want := "transient.on_exhausted: must be \"skip\" or \"stop\" (got \"\")\n" +
		"fallback_models[2]: duplicate of fallback_models[0] (\"model-b\")"
	if err == nil || err.Error() != want {
		t.Errorf("Validate: got %v, want %q", err, want)
	}
}
