package policy

import (
	"maps"
	"time"

	"github.com/acp-guard/acp-guard/classify"
)

// MaxDelay caps every computed retry delay (spec: "each computed retry delay
// is capped at 24 hours").
const MaxDelay = 24 * time.Hour

// Decision reasons.
const (
	ReasonStale        = "stale"         // evidence not tied to the current generation
	ReasonUnclassified = "unclassified"  // unknown or unconfigurable class
	ReasonRequestClass = "request_class" // the request must change; never retried
	ReasonUnsafe       = "unsafe"        // the replay-safety gate failed
	ReasonResetWait    = "reset_wait"    // waiting for a validated reset hint
	ReasonRetry        = "retry"         // retry within the budget
	ReasonRetryHint    = "retry_hint"    // retry within the budget, delayed to the provider's hint
	ReasonExhausted    = "exhausted"     // no wait applies and no retry remains
	// ReasonNotRetryable: an auth or credential failure is never retried
	// or waited for, whatever the policy says; on_exhausted
	// decides at once.
	ReasonNotRetryable = "not_retryable"
	// ReasonHintBeyondPolicy: the provider's validated hint asks for a
	// longer wait than any retry of the policy may take, and a retry is
	// never sent earlier than the hint: on_exhausted decides.
	ReasonHintBeyondPolicy = "hint_beyond_policy"
	// ReasonRetryHintHonoured: a retry within the budget, delayed to the
	// provider's validated relative hint although that is longer than
	// the policy's last backoff, because it is within
	// honour_hint_up_to_seconds (the vendor SDKs' rule).
	ReasonRetryHintHonoured = "retry_hint_honoured"
	// ReasonDiagnosticMismatch: the agent's retry note named another
	// class of failure than the error that followed.
	ReasonDiagnosticMismatch = "diagnostic_mismatch"
	// ReasonDiagnosticOnly: the failure is only what the agent's retry
	// notes named; no error followed them.
	ReasonDiagnosticOnly = "diagnostic_only"
)

// neverRetried are the codes no policy retries, waits for or overrides:
// auth and credential failures need a person.
var neverRetried = map[string]bool{classify.CodeAuthRequired: true, classify.CodeMissingCredentials: true}

// NeverRetried reports whether failures of code are never retried or
// waited for, whatever the policy says.
func NeverRetried(code string) bool { return neverRetried[code] }

// Class returns the policy of a configurable class ("transient" or "hard").
// ok is false for every other class.
func (d Document) Class(class string) (cp ClassPolicy, ok bool) {
	switch class {
	case classTransient:
		return d.Transient, true
	case classHard:
		return d.Hard, true
	}
	return ClassPolicy{}, false
}

// PolicyFor returns the policy a failure of class and code is evaluated
// with — the per-code override when the document has one, else its
// class's — and the key its budget and reset wait are counted under in a
// Route (the code, or the class). ok is false for a class that is not
// configurable.
func (d Document) PolicyFor(class, code string) (cp ClassPolicy, key string, ok bool) {
	if _, configurable := d.Class(class); !configurable {
		return ClassPolicy{}, class, false
	}
	if o, ok := d.Codes[code]; ok && string(classify.ClassOf(code)) == class {
		return o, code, true
	}
	cp, _ = d.Class(class)
	return cp, class, true
}

// Evaluate decides what to do about one failed attempt, in this order:
//
//  1. stale evidence, an unclassified or unknown class, the request class, or
//     a failed replay-safety gate stop (the gate cannot be configured away);
//     so do a failure that is only what the agent's retry notes named
//     (diagnostic_only) and one whose preceding note named another class
//     (diagnostic_mismatch);
//  2. an auth or credential failure is never retried or waited for:
//     on_exhausted at once (not_retryable);
//  3. when reset waiting is enabled and unused for the policy in this
//     route cycle, a validated future hint no further away than
//     max_wait_seconds schedules a wait until that deadline (a hint in the
//     past is ignored; a hint beyond the maximum is not shortened);
//  4. while the budget remains, a retry after a full-jitter draw from
//     [0, initial·2ⁿ] seconds (n = retries used; f.Jitter, else the whole
//     backoff; never under f.MinDelay when the backoff is not), each capped at [MaxDelay] — never earlier than a validated
//     hint, wait_for_reset or not: the delay is raised to the hint, and a
//     hint beyond the longest delay the policy allows (its last backoff,
//     or max_wait_seconds when waiting is enabled) ends the retries
//     (hint_beyond_policy) — unless it is a relative hint (RetryAfter,
//     not a ResetAt deadline) no longer than honour_hint_up_to_seconds
//     ([Document.HonourHintUpTo], default 60 s), which is honoured as
//     the delay (retry_hint_honoured);
//  5. otherwise on_exhausted: skip or stop.
//
// The policy is the failure's class's, or the document's per-code
// override for its code ([Document.PolicyFor]). The wait and the attempt
// after it do not consume the retry budget. When both ResetAt and
// RetryAfter are valid, the later deadline is used, so that neither hint
// is violated. Evaluate is pure: it reads no clock (f.Now is the present),
// draws only from f.Jitter, and returns an updated copy of r, never
// touching r's maps.
func Evaluate(doc Document, f Failure, r Route) (Decision, Route) {
	next := r.clone()
	if f.Stale {
		return stop(f, ReasonStale), next
	}
	if f.Class == classRequest {
		return stop(f, ReasonRequestClass), next
	}
	cp, key, ok := doc.PolicyFor(f.Class, f.Code)
	if !ok {
		return stop(f, ReasonUnclassified), next
	}
	if d, failed := gates(cp, f); failed {
		return d, next
	}
	if NeverRetried(f.Code) {
		return exhausted(cp, f, ReasonNotRetryable), next
	}
	if wait, ok := resetWait(cp, f, next.WaitUsed[key]); ok {
		next.WaitUsed[key] = true
		return waitDecision(cp, f, wait), next
	}
	used := next.Retries[key]
	if !cp.Retry.Enabled || used >= cp.Retry.MaxRetries {
		return exhausted(cp, f, ReasonExhausted), next
	}
	d := retryDecision(doc, cp, f, used)
	if d.Action == ActionRetry {
		next.Retries[key] = used + 1
	}
	return d, next
}

// clone is a copy of r whose maps are its own (and never nil).
func (r Route) clone() Route {
	next := Route{Retries: maps.Clone(r.Retries), WaitUsed: maps.Clone(r.WaitUsed)}
	if next.Retries == nil {
		next.Retries = map[string]int{}
	}
	if next.WaitUsed == nil {
		next.WaitUsed = map[string]bool{}
	}
	return next
}

// stop is the decision to stop at once, for reason.
func stop(f Failure, reason string) Decision {
	return Decision{Action: ActionStop, Class: f.Class, Reason: reason}
}

// gates are the stops of a configurable class that no policy changes: a
// failed replay-safety gate, and a failure the agent's retry notes alone
// describe, or describe as another class. failed is false when the
// failure passes them all.
func gates(cp ClassPolicy, f Failure) (d Decision, failed bool) {
	for _, gate := range []struct {
		fails  bool
		reason string
	}{
		{!f.Safe, ReasonUnsafe},
		{f.DiagnosticOnly, ReasonDiagnosticOnly},
		{f.Diagnostic != "" && f.Diagnostic != f.Class, ReasonDiagnosticMismatch},
	} {
		if gate.fails {
			d := stop(f, gate.reason)
			d.MaxRetries = budget(cp)
			return d, true
		}
	}
	return Decision{}, false
}

// waitDecision is the decision to wait for a validated reset hint.
func waitDecision(cp ClassPolicy, f Failure, wait time.Duration) Decision {
	return Decision{
		Action:     ActionWait,
		Delay:      wait,
		DelayMs:    millis(wait),
		Deadline:   f.Now.Add(wait),
		MaxRetries: budget(cp),
		Class:      f.Class,
		Reason:     ReasonResetWait,
	}
}

// retryDecision is the decision for a failure with retries left (used of
// them spent): a retry after the jittered backoff, raised to a validated
// hint — or on_exhausted, when the hint is beyond what the policy waits.
func retryDecision(doc Document, cp ClassPolicy, f Failure, used int) Decision {
	delay, reason := RetryDelay(cp.Retry.InitialIntervalSeconds, used), ReasonRetry
	if f.Jitter != nil {
		delay = max(f.Jitter(delay), min(f.MinDelay, delay))
	}
	if hint := hintOf(f); hint > delay {
		// Never earlier than the provider asked; when that is longer than
		// the policy would ever wait before a retry, no retry.
		switch {
		case hint <= retryCap(cp):
			delay, reason = hint, ReasonRetryHint
		case honoured(doc, f, hint):
			delay, reason = hint, ReasonRetryHintHonoured
		default:
			return exhausted(cp, f, ReasonHintBeyondPolicy)
		}
	}
	return Decision{
		Action:     ActionRetry,
		Delay:      delay,
		DelayMs:    millis(delay),
		Deadline:   f.Now.Add(delay),
		Attempt:    used + 1,
		MaxRetries: cp.Retry.MaxRetries,
		Class:      f.Class,
		Reason:     reason,
	}
}

// honoured reports whether hint, longer than the policy's last backoff,
// is still honoured as a retry's delay: it is the failure's relative hint
// (a reset deadline further away is not) and within
// honour_hint_up_to_seconds.
func honoured(doc Document, f Failure, hint time.Duration) bool {
	return f.RetryAfter != nil && *f.RetryAfter == hint && hint <= doc.HonourHintUpTo()
}

// exhausted is the on_exhausted decision.
func exhausted(cp ClassPolicy, f Failure, reason string) Decision {
	action := ActionStop
	if cp.OnExhausted == OutcomeSkip {
		action = ActionSkip
	}
	return Decision{Action: action, MaxRetries: budget(cp), Class: f.Class, Reason: reason}
}

// retryCap is the longest the policy waits before a retry: its last
// backoff delay, or max_wait_seconds when reset waiting is enabled.
func retryCap(cp ClassPolicy) time.Duration {
	limit := RetryDelay(cp.Retry.InitialIntervalSeconds, max(cp.Retry.MaxRetries-1, 0))
	if cp.WaitForReset.Enabled {
		limit = max(limit, time.Duration(min(cp.WaitForReset.MaxWaitSeconds, MaxWaitSecondsLimit))*time.Second)
	}
	return limit
}

// budget is the class's retry budget, zero when retry is disabled.
func budget(cp ClassPolicy) int {
	if !cp.Retry.Enabled {
		return 0
	}
	return max(cp.Retry.MaxRetries, 0)
}

// resetWait returns the wait a validated hint allows, if any.
func resetWait(cp ClassPolicy, f Failure, used bool) (time.Duration, bool) {
	if used {
		return 0, false
	}
	return hintWithin(cp, f)
}

// hintOf returns how long the failure's validated hints ask to wait: the
// later of ResetAt and RetryAfter (0 when there is none, or it is past).
func hintOf(f Failure) time.Duration {
	var wait time.Duration
	if f.ResetAt != nil && f.ResetAt.After(f.Now) {
		wait = f.ResetAt.Sub(f.Now)
	}
	if f.RetryAfter != nil && *f.RetryAfter > wait {
		wait = *f.RetryAfter
	}
	return wait
}

// hintWithin returns how long the failure's validated hints ask to wait
// (hintOf) when reset waiting is enabled and that is within
// max_wait_seconds. A hint in the past asks for nothing; a hint beyond the
// maximum is not shortened (ok is false).
func hintWithin(cp ClassPolicy, f Failure) (time.Duration, bool) {
	if !cp.WaitForReset.Enabled || cp.WaitForReset.MaxWaitSeconds <= 0 {
		return 0, false
	}
	wait := hintOf(f)
	limit := time.Duration(min(cp.WaitForReset.MaxWaitSeconds, MaxWaitSecondsLimit)) * time.Second
	if wait <= 0 || wait > limit {
		return 0, false
	}
	return wait, true
}

// RetryDelay is the delay before retry n+1 (n retries already used):
// initial·2ⁿ seconds, capped at [MaxDelay], without overflow for any n.
func RetryDelay(initialSeconds, n int) time.Duration {
	if initialSeconds <= 0 {
		return 0
	}
	if initialSeconds >= int(MaxDelay/time.Second) {
		return MaxDelay
	}
	d := time.Duration(initialSeconds) * time.Second
	for range max(n, 0) {
		if d >= MaxDelay/2 {
			return MaxDelay
		}
		d *= 2
	}
	return min(d, MaxDelay)
}

// millis rounds a positive duration up to whole milliseconds, so that a
// sub-millisecond wait is not reported as no wait.
func millis(d time.Duration) int64 {
	ms := d.Milliseconds()
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}
