package policy_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/policy"
)

// A Retry-After or reset hint is a floor for plain retries too.
// With reset waiting off, a 3 s hint is never retried after 1 s: it is
// retried after 3 s; a relative hint beyond the longest backoff the policy
// allows is honoured while the budget lasts when it is within
// honour_hint_up_to_seconds (default 60 s, the vendor SDKs' rule), and
// not retried at all beyond it.
func TestHintIsAFloorWithWaitsOff(t *testing.T) {
	const retries = `{"transient":{"retry":{"max_retries":3,"initial_interval_seconds":1},"on_exhausted":"stop"}`
	doc := mustParse(t, retries+`}`)
	off := mustParse(t, retries+`,"honour_hint_up_to_seconds":0}`)
	short := mustParse(t, `{"transient":{"retry":{"max_retries":2,"initial_interval_seconds":1},"on_exhausted":"stop"}}`)
	for _, tt := range []struct {
		name      string
		doc       policy.Document
		hint      time.Duration
		attempts  []time.Duration
		decisions []string
		reasons   []string
	}{
		{"3 s hint", doc, 3 * time.Second, secs(0, 3, 6, 10),
			[]string{"retry 1/3 in 3s", "retry 2/3 in 3s", "retry 3/3 in 4s", "stop (exhausted)"},
			[]string{"retry_hint", "retry_hint", "retry", "exhausted"}},
		{"3 s hint beyond a 1 s/2-retry policy", short, 3 * time.Second, secs(0, 3, 6),
			[]string{"retry 1/2 in 3s", "retry 2/2 in 3s", "stop (exhausted)"},
			[]string{"retry_hint_honoured", "retry_hint_honoured", "exhausted"}},
		{"hint beyond the last backoff, within 60 s", doc, 10 * time.Second, secs(0, 10, 20, 30),
			[]string{"retry 1/3 in 10s", "retry 2/3 in 10s", "retry 3/3 in 10s", "stop (exhausted)"},
			[]string{"retry_hint_honoured", "retry_hint_honoured", "retry_hint_honoured", "exhausted"}},
		{"hint beyond 60 s", doc, 61 * time.Second, secs(0), []string{"stop (hint_beyond_policy)"}, nil},
		{"honouring off", off, 10 * time.Second, secs(0), []string{"stop (hint_beyond_policy)"}, nil},
		{"no hint", doc, 0, secs(0, 1, 3, 7), []string{"retry 1/3 in 1s", "retry 2/3 in 2s", "retry 3/3 in 4s", "stop (exhausted)"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.doc
			f := policy.Failure{Class: "transient", Code: "rate_limited", Safe: true}
			if tt.hint > 0 {
				f.RetryAfter = &tt.hint
			}
			r := run(t, doc, always(f))
			if !reflect.DeepEqual(r.attempts, tt.attempts) {
				t.Errorf("attempts at %v, want %v", r.attempts, tt.attempts)
			}
			if !reflect.DeepEqual(r.decisions, tt.decisions) {
				t.Errorf("decisions %q, want %q", r.decisions, tt.decisions)
			}
			if tt.reasons != nil && !reflect.DeepEqual(r.reasons, tt.reasons) {
				t.Errorf("reasons %q, want %q", r.reasons, tt.reasons)
			}
		})
	}
}

// Full jitter: every delay is drawn from [0, backoff]; the same seed draws
// the same delays, and a hint is still the floor.
func TestFullJitter(t *testing.T) {
	doc := mustParse(t, `{"transient":{"retry":{"max_retries":10,"initial_interval_seconds":8},"on_exhausted":"stop"}}`)
	draw := func(seed uint64, hint time.Duration) []time.Duration {
		j := policy.NewJitter(seed)
		var out []time.Duration
		var r policy.Route
		for range 10 {
			f := policy.Failure{Class: "transient", Code: "provider_unavailable", Safe: true, Now: start, Jitter: j}
			if hint > 0 {
				f.RetryAfter = &hint
			}
			d, next := policy.Evaluate(doc, f, r)
			r = next
			if d.Action != policy.ActionRetry {
				t.Fatalf("decision %+v, want a retry", d)
			}
			out = append(out, d.Delay)
		}
		return out
	}
	a, b := draw(7, 0), draw(7, 0)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different delays: %v and %v", a, b)
	}
	if c := draw(8, 0); reflect.DeepEqual(a, c) {
		t.Errorf("seeds 7 and 8 drew the same delays %v", a)
	}
	below := 0
	for n, d := range a {
		if full := policy.RetryDelay(8, n); d < 0 || d > full || d%time.Millisecond != 0 {
			t.Errorf("retry %d: delay %v outside [0, %v] or not whole milliseconds", n+1, d, full)
		} else if d < full {
			below++
		}
	}
	if below == 0 {
		t.Errorf("no delay drawn below its backoff: %v", a)
	}
	for n, d := range draw(7, 5*time.Second) {
		if d < 5*time.Second {
			t.Errorf("retry %d: jittered delay %v under the 5s hint", n+1, d)
		}
	}
	// A floor (the circuits' least cooldown) bounds the draw from below.
	j := policy.NewJitter(7)
	var r policy.Route
	for n := range 10 {
		d, next := policy.Evaluate(doc, policy.Failure{Class: "transient", Code: "provider_unavailable", Safe: true, Now: start, Jitter: j, MinDelay: 3 * time.Second}, r)
		r = next
		if d.Delay < 3*time.Second || d.Delay > policy.RetryDelay(8, n) {
			t.Errorf("retry %d: delay %v outside [3s, %v]", n+1, d.Delay, policy.RetryDelay(8, n))
		}
	}
}

// Auth and credential failures are never retried or waited for, whatever
// the class policy says; on_exhausted decides at once.
func TestAuthNeverRetried(t *testing.T) {
	retryAll := `{"hard":{"retry":{"max_retries":10,"initial_interval_seconds":1},"wait_for_reset":{"max_wait_seconds":3600},"on_exhausted":"%s"}}`
	hint := 10 * time.Second
	for _, code := range []string{"auth_required", "missing_credentials"} {
		for _, outcome := range []string{"skip", "stop"} {
			doc := mustParse(t, strings.Replace(retryAll, "%s", outcome, 1))
			r := run(t, doc, always(policy.Failure{Class: "hard", Code: code, Safe: true, RetryAfter: &hint}))
			if want := []string{outcome + " (not_retryable)"}; !reflect.DeepEqual(r.decisions, want) {
				t.Errorf("%s with on_exhausted %s: decisions %q, want %q", code, outcome, r.decisions, want)
			}
		}
	}
	// Other hard codes under the same policy are retried.
	doc := mustParse(t, strings.Replace(retryAll, "%s", "stop", 1))
	if d, _ := policy.Evaluate(doc, policy.Failure{Class: "hard", Code: "quota_limited", Safe: true, Now: start}, policy.Route{}); d.Action != policy.ActionRetry {
		t.Errorf("quota_limited: got %+v, want a retry", d)
	}
}

// A retry note counts only when it matches the error that follows: a
// "transient" note followed by a hard failure stops recovery; one of the
// same class does not; a failure that is only what the notes named never
// recovers.
func TestDiagnosticsMustMatch(t *testing.T) {
	doc := mustParse(t, designDoc)
	hardRetry := mustParse(t, `{"transient":{"retry":{"max_retries":3,"initial_interval_seconds":5}},"hard":{"retry":{"max_retries":3,"initial_interval_seconds":5}}}`)
	for _, tt := range []struct {
		name   string
		doc    policy.Document
		f      policy.Failure
		action policy.Action
		reason string
	}{
		{"transient note, transient error", doc, policy.Failure{Class: "transient", Code: "provider_unavailable", Diagnostic: "transient"}, policy.ActionRetry, policy.ReasonRetry},
		{"no note", doc, policy.Failure{Class: "transient", Code: "provider_unavailable"}, policy.ActionRetry, policy.ReasonRetry},
		{"transient note, 401", hardRetry, policy.Failure{Class: "hard", Code: "auth_required", Diagnostic: "transient"}, policy.ActionStop, policy.ReasonDiagnosticMismatch},
		{"transient note, quota", hardRetry, policy.Failure{Class: "hard", Code: "quota_limited", Diagnostic: "transient"}, policy.ActionStop, policy.ReasonDiagnosticMismatch},
		{"hard note, 503", doc, policy.Failure{Class: "transient", Code: "provider_unavailable", Diagnostic: "hard"}, policy.ActionStop, policy.ReasonDiagnosticMismatch},
		{"notes only", doc, policy.Failure{Class: "transient", Code: "network_unavailable", DiagnosticOnly: true}, policy.ActionStop, policy.ReasonDiagnosticOnly},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.Safe, tt.f.Now = true, start
			d, _ := policy.Evaluate(tt.doc, tt.f, policy.Route{})
			if d.Action != tt.action || d.Reason != tt.reason {
				t.Errorf("got %s (%s), want %s (%s)", d.Action, d.Reason, tt.action, tt.reason)
			}
		})
	}
}

// Per-code overrides replace their class's policy for their code, with a
// budget of their own.
func TestPerCodeOverrides(t *testing.T) {
	doc := mustParse(t, `{"version":1,
	 "transient":{"retry":{"max_retries":2,"initial_interval_seconds":5},"on_exhausted":"skip"},
	 "hard":{"on_exhausted":"stop"},
	 "codes":{"quota_limited":{"retry":{"max_retries":1,"initial_interval_seconds":60},"on_exhausted":"skip"},
	          "rate_limited":{"retry":{"max_retries":4,"initial_interval_seconds":1},"on_exhausted":"stop"}}}`)
	r := run(t, doc, always(policy.Failure{Class: "hard", Code: "quota_limited", Safe: true}))
	if want := []string{"retry 1/1 in 1m0s", "skip (exhausted)"}; !reflect.DeepEqual(r.decisions, want) {
		t.Errorf("quota_limited: decisions %q, want %q", r.decisions, want)
	}
	r = run(t, doc, always(policy.Failure{Class: "hard", Code: "subscription_required", Safe: true}))
	if want := []string{"stop (exhausted)"}; !reflect.DeepEqual(r.decisions, want) {
		t.Errorf("subscription_required (the class's policy): decisions %q, want %q", r.decisions, want)
	}
	r = run(t, doc, always(policy.Failure{Class: "transient", Code: "rate_limited", Safe: true}))
	if want := []string{"retry 1/4 in 1s", "retry 2/4 in 2s", "retry 3/4 in 4s", "retry 4/4 in 8s", "stop (exhausted)"}; !reflect.DeepEqual(r.decisions, want) {
		t.Errorf("rate_limited: decisions %q, want %q", r.decisions, want)
	}
	// The override's budget is its own: two rate limits do not spend the
	// transient class's retries.
	var route policy.Route
	for range 2 {
		_, route = policy.Evaluate(doc, policy.Failure{Class: "transient", Code: "rate_limited", Safe: true, Now: start}, route)
	}
	if d, _ := policy.Evaluate(doc, policy.Failure{Class: "transient", Code: "provider_unavailable", Safe: true, Now: start}, route); d.Attempt != 1 {
		t.Errorf("provider_unavailable after two rate limits: attempt %d, want 1", d.Attempt)
	}
	desc := doc.Describe()
	for _, want := range []string{"code quota_limited: retry after up to 1m0s, then skip", "code rate_limited: retry after up to 1s, 2s, 4s, 8s, then stop"} {
		if !strings.Contains(desc, want) {
			t.Errorf("Describe lacks %q:\n%s", want, desc)
		}
	}
	back, err := policy.Parse(doc.Normalized())
	if err != nil || !reflect.DeepEqual(back, doc) {
		t.Errorf("normalized document does not parse back: %v\n%s", err, doc.Normalized())
	}
}

func TestPerCodeOverridesInvalid(t *testing.T) {
	_, err := policy.Parse([]byte(`{"codes":{
	  "quota_limitd":{"on_exhausted":"stop"},
	  "context_overflow":{"on_exhausted":"stop"},
	  "auth_required":{"retry":{"max_retries":2,"initial_interval_seconds":1},"wait_for_reset":{"max_wait_seconds":60}},
	  "rate_limited":{"retry":{"max_retries":0,"initial_interval_seconds":1},"on_exhausted":"later","extra":1},
	  "missing_credentials":{"on_exhausted":"skip"}}}`))
	var verr *policy.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("got %v, want a ValidationError", err)
	}
	var fields []string
	for _, fe := range verr.Errors {
		fields = append(fields, fe.Field)
	}
	want := []string{
		"codes.rate_limited.extra",
		"codes.auth_required.retry.enabled",
		"codes.auth_required.wait_for_reset.enabled",
		"codes.context_overflow",
		"codes.quota_limitd",
		"codes.rate_limited.retry.max_retries",
		"codes.rate_limited.on_exhausted",
	}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("fields %q, want %q\n%v", fields, want, err)
	}
	if _, err := policy.Parse([]byte(`{"codes":[]}`)); err == nil || !strings.Contains(err.Error(), "codes: must be an object") {
		t.Errorf("codes as an array: got %v", err)
	}
}
