package policy_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/policy"
)

var start = time.Date(2026, 9, 15, 12, 0, 0, 0, time.UTC)

// route drives one route cycle the way the recovery engine does: an attempt
// fails (or not), the policy decides, a timer on the fake clock runs the
// next attempt. It records when each attempt ran and every decision.
type route struct {
	clock     *fakeClock
	doc       policy.Document
	state     policy.Route
	outcome   func(attempt int, now time.Time) *policy.Failure // nil: success
	attempts  []time.Duration                                  // offsets from start
	decisions []string
	reasons   []string
	final     policy.Decision
	succeeded bool
}

func (r *route) attempt() {
	now := r.clock.Now()
	n := len(r.attempts)
	r.attempts = append(r.attempts, now.Sub(start))
	f := r.outcome(n, now)
	if f == nil {
		r.succeeded = true
		return
	}
	f.Now = now
	d, next := policy.Evaluate(r.doc, *f, r.state)
	r.state = next
	r.decisions = append(r.decisions, describe(d))
	r.reasons = append(r.reasons, d.Reason)
	switch d.Action {
	case policy.ActionRetry, policy.ActionWait:
		if !d.Deadline.Equal(now.Add(d.Delay)) {
			panic(fmt.Sprintf("deadline %v is not now+%v", d.Deadline, d.Delay))
		}
		r.clock.AfterFunc(d.Delay, r.attempt)
	default:
		r.final = d
	}
}

// fakeClock runs the route's timers in deadline order as the test advances
// it. (The recovery engine's own clock is the relay's scheduler,
// transport.Output; policy has none: it is pure.)
type fakeClock struct {
	now    time.Time
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Time
	fn func()
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) AfterFunc(d time.Duration, fn func()) {
	c.timers = append(c.timers, fakeTimer{at: c.now.Add(d), fn: fn})
}

// Advance moves the clock by d, firing due timers in deadline order (each
// at its deadline); timers they arm fire too when due.
func (c *fakeClock) Advance(d time.Duration) {
	end := c.now.Add(d)
	for {
		i := -1
		for j, t := range c.timers {
			if !t.at.After(end) && (i < 0 || t.at.Before(c.timers[i].at)) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		t := c.timers[i]
		c.timers = append(c.timers[:i], c.timers[i+1:]...)
		c.now = t.at
		t.fn()
	}
	c.now = end
}

// Pending returns the deadlines of the timers not yet fired.
func (c *fakeClock) Pending() []time.Time {
	var out []time.Time
	for _, t := range c.timers {
		out = append(out, t.at)
	}
	return out
}

func describe(d policy.Decision) string {
	switch d.Action {
	case policy.ActionRetry:
		return fmt.Sprintf("retry %d/%d in %v", d.Attempt, d.MaxRetries, d.Delay)
	case policy.ActionWait:
		return fmt.Sprintf("wait %v", d.Delay)
	}
	return fmt.Sprintf("%s (%s)", d.Action, d.Reason)
}

// run starts the route and advances the fake clock far enough for every
// possible schedule (10 retries capped at 24 h plus a 7 day wait).
func run(t *testing.T, doc policy.Document, outcome func(int, time.Time) *policy.Failure) *route {
	t.Helper()
	r := &route{clock: &fakeClock{now: start}, doc: doc, outcome: outcome}
	r.attempt()
	r.clock.Advance(20 * 24 * time.Hour)
	if p := r.clock.Pending(); len(p) != 0 {
		t.Fatalf("timers still pending: %v", p)
	}
	return r
}

func always(f policy.Failure) func(int, time.Time) *policy.Failure {
	return func(int, time.Time) *policy.Failure { g := f; return &g }
}

func secs(s ...int) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, v := range s {
		out[i] = time.Duration(v) * time.Second
	}
	return out
}

func mustParse(t *testing.T, s string) policy.Document {
	t.Helper()
	d, err := policy.Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return d
}

// designDoc is the package doc's example: transient 3 retries from 5 s with a
// 5 minute reset wait then skip; hard stops.
const designDoc = `{"version":1,
 "transient":{"retry":{"enabled":true,"max_retries":3,"initial_interval_seconds":5},
              "wait_for_reset":{"enabled":true,"max_wait_seconds":300},"on_exhausted":"skip"},
 "hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},
         "wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
 "fallback_models":["model-b"]}`

// Scenario 1: a capacity error before output, three retries from 5 s →
// waits of 5, 10 and 20 s, then the configured exhausted outcome.
func TestScenarioTransientBackoff(t *testing.T) {
	for _, outcome := range []string{"skip", "stop"} {
		t.Run(outcome, func(t *testing.T) {
			doc := mustParse(t, designDoc)
			doc.Transient.OnExhausted = policy.Outcome(outcome)
			r := run(t, doc, always(policy.Failure{Class: "transient", Code: "model_capacity", Safe: true}))
			if want := secs(0, 5, 15, 35); !reflect.DeepEqual(r.attempts, want) {
				t.Errorf("attempts at %v, want %v", r.attempts, want)
			}
			want := []string{"retry 1/3 in 5s", "retry 2/3 in 10s", "retry 3/3 in 20s", outcome + " (exhausted)"}
			if !reflect.DeepEqual(r.decisions, want) {
				t.Errorf("decisions %q, want %q", r.decisions, want)
			}
		})
	}
}

// A retry that succeeds ends the route: no further attempts.
func TestScenarioRetrySucceeds(t *testing.T) {
	doc := mustParse(t, designDoc)
	r := run(t, doc, func(n int, _ time.Time) *policy.Failure {
		if n < 2 {
			return &policy.Failure{Class: "transient", Code: "provider_overloaded", Safe: true}
		}
		return nil
	})
	if want := secs(0, 5, 15); !reflect.DeepEqual(r.attempts, want) || !r.succeeded {
		t.Errorf("attempts at %v succeeded=%v, want %v and success", r.attempts, r.succeeded, want)
	}
}

// quota is a hard failure whose trusted reset is `in` after each attempt.
func quota(in time.Duration) func(int, time.Time) *policy.Failure {
	return func(_ int, now time.Time) *policy.Failure {
		reset := now.Add(in)
		return &policy.Failure{Class: "hard", Code: "quota_limited", Safe: true, ResetAt: &reset}
	}
}

// Scenario 2: a reset one minute away with hard waits up to five minutes →
// wait until the reset and retry once; a repeated hint does not wait again.
func TestScenarioResetWaitOnce(t *testing.T) {
	for _, tt := range []struct {
		name      string
		hard      string
		attempts  []time.Duration
		decisions []string
	}{
		{"no retry: wait, then stop",
			`{"retry":{"enabled":false},"wait_for_reset":{"enabled":true,"max_wait_seconds":300},"on_exhausted":"stop"}`,
			secs(0, 60), []string{"wait 1m0s", "stop (exhausted)"}},
		// The provider keeps asking for a minute: after the one wait, the
		// retries wait for the hint instead of their shorter backoff.
		{"wait does not consume the retry budget; retries never shorten the hint",
			`{"retry":{"enabled":true,"max_retries":2,"initial_interval_seconds":10},"wait_for_reset":{"enabled":true,"max_wait_seconds":300},"on_exhausted":"skip"}`,
			secs(0, 60, 120, 180), []string{"wait 1m0s", "retry 1/2 in 1m0s", "retry 2/2 in 1m0s", "skip (exhausted)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := mustParse(t, `{"version":1,"transient":{"on_exhausted":"skip"},"hard":`+tt.hard+`}`)
			r := run(t, doc, quota(time.Minute))
			if !reflect.DeepEqual(r.attempts, tt.attempts) {
				t.Errorf("attempts at %v, want %v", r.attempts, tt.attempts)
			}
			if !reflect.DeepEqual(r.decisions, tt.decisions) {
				t.Errorf("decisions %q, want %q", r.decisions, tt.decisions)
			}
		})
	}
}

// Scenario 3: the same reset six hours away with a five-minute maximum is
// not shortened: the route proceeds to the exhausted outcome — a retry
// would ask the provider again before its reset, and a hint is
// the floor of every retry (hint_beyond_policy).
func TestScenarioResetTooFar(t *testing.T) {
	for _, tt := range []struct {
		name      string
		hard      string
		attempts  []time.Duration
		decisions []string
	}{
		{"to the exhausted outcome",
			`{"wait_for_reset":{"enabled":true,"max_wait_seconds":300},"on_exhausted":"stop"}`,
			secs(0), []string{"stop (exhausted)"}},
		{"not to a retry before the reset",
			`{"retry":{"enabled":true,"max_retries":1,"initial_interval_seconds":30},"wait_for_reset":{"enabled":true,"max_wait_seconds":300},"on_exhausted":"skip"}`,
			secs(0), []string{"skip (hint_beyond_policy)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := mustParse(t, `{"version":1,"transient":{"on_exhausted":"skip"},"hard":`+tt.hard+`}`)
			r := run(t, doc, quota(6*time.Hour))
			if !reflect.DeepEqual(r.attempts, tt.attempts) {
				t.Errorf("attempts at %v, want %v", r.attempts, tt.attempts)
			}
			if !reflect.DeepEqual(r.decisions, tt.decisions) {
				t.Errorf("decisions %q, want %q", r.decisions, tt.decisions)
			}
		})
	}
}

// Scenarios 4–7 end the route at once with the policy's or the gate's word.
func TestScenarioImmediateOutcomes(t *testing.T) {
	retryEverything := `{"version":1,
	 "transient":{"retry":{"enabled":true,"max_retries":10,"initial_interval_seconds":1},"wait_for_reset":{"enabled":true,"max_wait_seconds":604800},"on_exhausted":"skip"},
	 "hard":{"retry":{"enabled":true,"max_retries":10,"initial_interval_seconds":1},"wait_for_reset":{"enabled":true,"max_wait_seconds":604800},"on_exhausted":"skip"}}`
	inAMinute := start.Add(time.Minute)
	for _, tt := range []struct {
		name string
		doc  string
		f    policy.Failure
		want policy.Decision
	}{
		{"default policy skips at once", `"try_next"`,
			policy.Failure{Class: "transient", Code: "provider_unavailable", Safe: true},
			policy.Decision{Action: policy.ActionSkip, Class: "transient", Reason: policy.ReasonExhausted}},
		{"hard stop without trying another (exhausted credits)", designDoc,
			policy.Failure{Class: "hard", Code: "quota_limited", Safe: true},
			policy.Decision{Action: policy.ActionStop, Class: "hard", Reason: policy.ReasonExhausted}},
		{"unknown string stops", retryEverything,
			policy.Failure{Class: "unclassified", Code: "unclassified", Safe: true},
			policy.Decision{Action: policy.ActionStop, Class: "unclassified", Reason: policy.ReasonUnclassified}},
		{"tool activity stops despite a retry policy", retryEverything,
			policy.Failure{Class: "transient", Code: "agent_transport_lost", Safe: false, ResetAt: &inAMinute},
			policy.Decision{Action: policy.ActionStop, MaxRetries: 10, Class: "transient", Reason: policy.ReasonUnsafe}},
		{"request class never retried", retryEverything,
			policy.Failure{Class: "request", Code: "context_overflow", Safe: true},
			policy.Decision{Action: policy.ActionStop, Class: "request", Reason: policy.ReasonRequestClass}},
		{"stale evidence stops", retryEverything,
			policy.Failure{Class: "transient", Code: "network_unavailable", Safe: true, Stale: true},
			policy.Decision{Action: policy.ActionStop, Class: "transient", Reason: policy.ReasonStale}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, mustParse(t, tt.doc), always(tt.f))
			if len(r.attempts) != 1 {
				t.Errorf("attempts at %v, want only the first", r.attempts)
			}
			if !reflect.DeepEqual(r.final, tt.want) {
				t.Errorf("final decision:\ngot  %+v\nwant %+v", r.final, tt.want)
			}
		})
	}
}

// Ten retries from one hour: each delay is capped at 24 h.
func TestScenarioDelayCap(t *testing.T) {
	doc := mustParse(t, `{"version":1,"transient":{"retry":{"enabled":true,"max_retries":10,"initial_interval_seconds":3600},"on_exhausted":"stop"},"hard":{"on_exhausted":"stop"}}`)
	r := run(t, doc, always(policy.Failure{Class: "transient", Code: "provider_unavailable", Safe: true}))
	h := time.Hour
	var want []time.Duration
	var at time.Duration
	for _, d := range []time.Duration{h, 2 * h, 4 * h, 8 * h, 16 * h, 24 * h, 24 * h, 24 * h, 24 * h, 24 * h} {
		want = append(want, at)
		at += d
	}
	want = append(want, at)
	if !reflect.DeepEqual(r.attempts, want) {
		t.Errorf("attempts at %v, want %v", r.attempts, want)
	}
	if got := r.decisions[len(r.decisions)-1]; got != "stop (exhausted)" {
		t.Errorf("last decision %q, want stop (exhausted)", got)
	}
	if got := doc.Schedule("transient"); got != "retry after up to 1h0m0s, 2h0m0s, 4h0m0s, 8h0m0s, 16h0m0s, 24h0m0s, 24h0m0s, 24h0m0s, 24h0m0s, 24h0m0s, then stop" {
		t.Errorf("Schedule: got %q", got)
	}
}

// Legacy retry_same: one retry after 5 s, then stop.
func TestScenarioLegacyRetrySame(t *testing.T) {
	r := run(t, mustParse(t, `"retry_same"`), always(policy.Failure{Class: "hard", Code: "quota_limited", Safe: true}))
	if want := secs(0, 5); !reflect.DeepEqual(r.attempts, want) {
		t.Errorf("attempts at %v, want %v", r.attempts, want)
	}
	if want := []string{"retry 1/1 in 5s", "stop (exhausted)"}; !reflect.DeepEqual(r.decisions, want) {
		t.Errorf("decisions %q, want %q", r.decisions, want)
	}
}

// Hints inside the policy are never shortened, and never lengthen a
// backoff they do not exceed: with the package doc's policy (5 s, 10 s, 20 s;
// waits up to 5 minutes) a provider asking for 7 s first gets its wait,
// then backoffs of 7 s (the hint), 10 s and 20 s; one asking for 2 s leaves
// the policy's 5, 10, 20 exact after its wait; one asking for an hour (beyond
// the maximum) is never retried before the hour: the route ends at once.
func TestScenarioHintsNeverShortened(t *testing.T) {
	after := func(d time.Duration) func(int, time.Time) *policy.Failure {
		return always(policy.Failure{Class: "transient", Code: "rate_limited", Safe: true, RetryAfter: &d})
	}
	for _, tt := range []struct {
		name      string
		hint      time.Duration
		attempts  []time.Duration
		decisions []string
	}{
		{"hint longer than the first backoff", 7 * time.Second, secs(0, 7, 14, 24, 44),
			[]string{"wait 7s", "retry 1/3 in 7s", "retry 2/3 in 10s", "retry 3/3 in 20s", "skip (exhausted)"}},
		{"hint shorter than every backoff", 2 * time.Second, secs(0, 2, 7, 17, 37),
			[]string{"wait 2s", "retry 1/3 in 5s", "retry 2/3 in 10s", "retry 3/3 in 20s", "skip (exhausted)"}},
		{"hint beyond the maximum", time.Hour, secs(0),
			[]string{"skip (hint_beyond_policy)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, mustParse(t, designDoc), after(tt.hint))
			if !reflect.DeepEqual(r.attempts, tt.attempts) {
				t.Errorf("attempts at %v, want %v", r.attempts, tt.attempts)
			}
			if !reflect.DeepEqual(r.decisions, tt.decisions) {
				t.Errorf("decisions %q, want %q", r.decisions, tt.decisions)
			}
		})
	}
}
