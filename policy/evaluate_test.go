package policy

import (
	"math"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 9, 15, 12, 0, 0, 0, time.UTC)

func dur(d time.Duration) *time.Duration { return &d }
func at(t time.Time) *time.Time          { return &t }

// retryAll retries and waits for both classes, so that any stop it yields
// comes from the gate, not from the configuration.
func retryAll() Document {
	cp := ClassPolicy{
		Retry:        Retry{Enabled: true, MaxRetries: 10, InitialIntervalSeconds: 1},
		WaitForReset: WaitForReset{Enabled: true, MaxWaitSeconds: MaxWaitSecondsLimit},
		OnExhausted:  OutcomeSkip,
	}
	return Document{Version: 1, Transient: cp, Hard: cp}
}

// TestEvaluateGate covers step 1: what stops regardless of the policy.
func TestEvaluateGate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		f      Failure
		reason string
	}{
		{"stale evidence", Failure{Class: "transient", Stale: true, Safe: true}, ReasonStale},
		{"stale beats unsafe", Failure{Class: "transient", Stale: true}, ReasonStale},
		{"unclassified", Failure{Class: "unclassified", Safe: true}, ReasonUnclassified},
		{"empty class", Failure{Safe: true}, ReasonUnclassified},
		{"unknown class", Failure{Class: "cosmic", Safe: true}, ReasonUnclassified},
		{"request class is never retried", Failure{Class: "request", Code: "context_overflow", Safe: true}, ReasonRequestClass},
		{"unsafe transient (tool activity)", Failure{Class: "transient", Code: "agent_transport_lost"}, ReasonUnsafe},
		{"unsafe hard", Failure{Class: "hard", Code: "quota_limited", ResetAt: at(t0.Add(time.Minute))}, ReasonUnsafe},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.Now = t0
			in := Route{Retries: map[string]int{}, WaitUsed: map[string]bool{}}
			d, r := Evaluate(retryAll(), tt.f, in)
			if d.Action != ActionStop || d.Reason != tt.reason {
				t.Errorf("Evaluate: got %s/%s, want stop/%s", d.Action, d.Reason, tt.reason)
			}
			if d.Delay != 0 || !d.Deadline.IsZero() || d.Attempt != 0 {
				t.Errorf("Evaluate: got delay %v deadline %v attempt %d, want none", d.Delay, d.Deadline, d.Attempt)
			}
			if len(r.Retries) != 0 || len(r.WaitUsed) != 0 {
				t.Errorf("Route: got %+v, want unchanged", r)
			}
		})
	}
}

// TestEvaluateWait covers step 2: which hints are waited for.
func TestEvaluateWait(t *testing.T) {
	doc := Document{Version: 1,
		Transient: ClassPolicy{WaitForReset: WaitForReset{Enabled: true, MaxWaitSeconds: 300}, OnExhausted: OutcomeStop},
		Hard:      ClassPolicy{OnExhausted: OutcomeStop},
	}
	for _, tt := range []struct {
		name       string
		class      string
		retryAfter *time.Duration
		resetAt    *time.Time
		used       bool
		wantWait   time.Duration // 0: no wait
	}{
		{"reset one minute away", "transient", nil, at(t0.Add(time.Minute)), false, time.Minute},
		{"retry-after hint", "transient", dur(30 * time.Second), nil, false, 30 * time.Second},
		{"both hints: the later one", "transient", dur(90 * time.Second), at(t0.Add(time.Minute)), false, 90 * time.Second},
		{"both hints, reset later", "transient", dur(10 * time.Second), at(t0.Add(time.Minute)), false, time.Minute},
		{"reset exactly at the maximum", "transient", nil, at(t0.Add(300 * time.Second)), false, 300 * time.Second},
		{"reset just beyond the maximum is not shortened", "transient", nil, at(t0.Add(300*time.Second + time.Nanosecond)), false, 0},
		{"reset six hours away", "transient", nil, at(t0.Add(6 * time.Hour)), false, 0},
		{"retry-after beyond the maximum, reset within", "transient", dur(time.Hour), at(t0.Add(time.Minute)), false, 0},
		{"reset now is ignored", "transient", nil, at(t0), false, 0},
		{"reset in the past is ignored", "transient", nil, at(t0.Add(-time.Minute)), false, 0},
		{"past reset, valid retry-after", "transient", dur(20 * time.Second), at(t0.Add(-time.Minute)), false, 20 * time.Second},
		{"zero retry-after", "transient", dur(0), nil, false, 0},
		{"negative retry-after", "transient", dur(-time.Second), nil, false, 0},
		{"no hint", "transient", nil, nil, false, 0},
		{"wait already used for the class", "transient", nil, at(t0.Add(time.Minute)), true, 0},
		{"wait disabled for the class", "hard", nil, at(t0.Add(time.Minute)), false, 0},
		{"sub-millisecond wait", "transient", dur(time.Microsecond), nil, false, time.Microsecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := Failure{Class: tt.class, Safe: true, Now: t0, RetryAfter: tt.retryAfter, ResetAt: tt.resetAt}
			in := Route{WaitUsed: map[string]bool{tt.class: tt.used}}
			d, r := Evaluate(doc, f, in)
			if tt.wantWait == 0 {
				if d.Action == ActionWait {
					t.Fatalf("Evaluate: got wait %v, want no wait", d.Delay)
				}
				if r.WaitUsed[tt.class] != tt.used {
					t.Errorf("WaitUsed: got %v, want %v", r.WaitUsed[tt.class], tt.used)
				}
				return
			}
			want := Decision{Action: ActionWait, Delay: tt.wantWait, DelayMs: millis(tt.wantWait),
				Deadline: t0.Add(tt.wantWait), Class: tt.class, Reason: ReasonResetWait}
			if !reflect.DeepEqual(d, want) {
				t.Errorf("Evaluate: got %+v, want %+v", d, want)
			}
			if !r.WaitUsed[tt.class] {
				t.Errorf("WaitUsed[%s]: got false, want true", tt.class)
			}
			if r.Retries[tt.class] != 0 {
				t.Errorf("Retries[%s]: got %d, want 0 (the wait does not consume the budget)", tt.class, r.Retries[tt.class])
			}
		})
	}
	if got := millis(time.Microsecond); got != 1 {
		t.Errorf("millis(1µs): got %d, want 1", got)
	}
}

// TestEvaluateRetryAndExhausted covers steps 3 and 4.
func TestEvaluateRetryAndExhausted(t *testing.T) {
	for _, tt := range []struct {
		name   string
		cp     ClassPolicy
		used   int
		want   Decision
		wantTo int // Retries after
	}{
		{"first retry", ClassPolicy{Retry: Retry{true, 3, 5}, OnExhausted: OutcomeSkip}, 0,
			Decision{Action: ActionRetry, Delay: 5 * time.Second, DelayMs: 5000, Deadline: t0.Add(5 * time.Second), Attempt: 1, MaxRetries: 3, Class: "transient", Reason: ReasonRetry}, 1},
		{"third retry doubles twice", ClassPolicy{Retry: Retry{true, 3, 5}, OnExhausted: OutcomeSkip}, 2,
			Decision{Action: ActionRetry, Delay: 20 * time.Second, DelayMs: 20000, Deadline: t0.Add(20 * time.Second), Attempt: 3, MaxRetries: 3, Class: "transient", Reason: ReasonRetry}, 3},
		{"exhausted skip", ClassPolicy{Retry: Retry{true, 3, 5}, OnExhausted: OutcomeSkip}, 3,
			Decision{Action: ActionSkip, MaxRetries: 3, Class: "transient", Reason: ReasonExhausted}, 3},
		{"exhausted stop", ClassPolicy{Retry: Retry{true, 3, 5}, OnExhausted: OutcomeStop}, 3,
			Decision{Action: ActionStop, MaxRetries: 3, Class: "transient", Reason: ReasonExhausted}, 3},
		{"retry disabled: immediate skip", ClassPolicy{OnExhausted: OutcomeSkip}, 0,
			Decision{Action: ActionSkip, Class: "transient", Reason: ReasonExhausted}, 0},
		{"invalid outcome fails closed", ClassPolicy{OnExhausted: "later"}, 0,
			Decision{Action: ActionStop, Class: "transient", Reason: ReasonExhausted}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := Document{Version: 1, Transient: tt.cp, Hard: ClassPolicy{OnExhausted: OutcomeStop}}
			in := Route{Retries: map[string]int{"transient": tt.used}}
			d, r := Evaluate(doc, Failure{Class: "transient", Safe: true, Now: t0}, in)
			if !reflect.DeepEqual(d, tt.want) {
				t.Errorf("Evaluate:\ngot  %+v\nwant %+v", d, tt.want)
			}
			if r.Retries["transient"] != tt.wantTo {
				t.Errorf("Retries: got %d, want %d", r.Retries["transient"], tt.wantTo)
			}
			if in.Retries["transient"] != tt.used {
				t.Errorf("caller's Retries: got %d, want %d (Evaluate must not mutate it)", in.Retries["transient"], tt.used)
			}
		})
	}
}

func TestEvaluateDoesNotMutateRoute(t *testing.T) {
	in := Route{Retries: map[string]int{"hard": 1}, WaitUsed: map[string]bool{"hard": false}}
	doc := retryAll()
	_, r := Evaluate(doc, Failure{Class: "transient", Safe: true, Now: t0, ResetAt: at(t0.Add(time.Minute))}, in)
	_, r = Evaluate(doc, Failure{Class: "transient", Safe: true, Now: t0}, r)
	if !reflect.DeepEqual(in, Route{Retries: map[string]int{"hard": 1}, WaitUsed: map[string]bool{"hard": false}}) {
		t.Errorf("caller's route: got %+v, want it unchanged", in)
	}
	want := Route{Retries: map[string]int{"hard": 1, "transient": 1}, WaitUsed: map[string]bool{"hard": false, "transient": true}}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("route: got %+v, want %+v", r, want)
	}
	// A zero Route is usable.
	d, r := Evaluate(doc, Failure{Class: "hard", Safe: true, Now: t0}, Route{})
	if d.Action != ActionRetry || r.Retries["hard"] != 1 {
		t.Errorf("Evaluate with zero Route: got %s, Retries %v; want retry, hard=1", d.Action, r.Retries)
	}
}

// TestEvaluateWaitPerClass: waiting is once per class, so the other class
// keeps its own wait.
func TestEvaluateWaitPerClass(t *testing.T) {
	doc := retryAll()
	hint := at(t0.Add(time.Minute))
	d, r := Evaluate(doc, Failure{Class: "transient", Safe: true, Now: t0, ResetAt: hint}, Route{})
	if d.Action != ActionWait {
		t.Fatalf("transient: got %s, want wait", d.Action)
	}
	d, r = Evaluate(doc, Failure{Class: "transient", Safe: true, Now: t0, ResetAt: hint}, r)
	if d.Action != ActionRetry {
		t.Errorf("transient again: got %s, want retry (wait used)", d.Action)
	}
	d, _ = Evaluate(doc, Failure{Class: "hard", Safe: true, Now: t0, ResetAt: hint}, r)
	if d.Action != ActionWait {
		t.Errorf("hard: got %s, want wait (its own once)", d.Action)
	}
}

func TestRetryDelay(t *testing.T) {
	for _, tt := range []struct {
		initial, n int
		want       time.Duration
	}{
		{5, 0, 5 * time.Second},
		{5, 1, 10 * time.Second},
		{5, 2, 20 * time.Second},
		{1, 9, 512 * time.Second},
		{3600, 4, 16 * time.Hour},
		{3600, 5, 24 * time.Hour},
		{3600, 9, 24 * time.Hour},
		{1, 63, 24 * time.Hour},
		{1, math.MaxInt, 24 * time.Hour},
		{math.MaxInt, 0, 24 * time.Hour},
		{86400, 0, 24 * time.Hour},
		{86399, 1, 24 * time.Hour},
		{5, -1, 5 * time.Second},
		{0, 3, 0},
		{-5, 3, 0},
	} {
		if got := RetryDelay(tt.initial, tt.n); got != tt.want {
			t.Errorf("RetryDelay(%d, %d): got %v, want %v", tt.initial, tt.n, got, tt.want)
		}
	}
}
