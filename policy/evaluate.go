package policy

import (
	"maps"
	"time"
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
)

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

// Evaluate decides what to do about one failed attempt, in this order:
//
//  1. stale evidence, an unclassified or unknown class, the request class, or
//     a failed replay-safety gate stop (the gate cannot be configured away);
//  2. when reset waiting is enabled and unused for the class in this route
//     cycle, a validated future hint no further away than max_wait_seconds
//     schedules a wait until that deadline (a hint in the past is ignored; a
//     hint beyond the maximum is not shortened);
//  3. while the class's retry budget remains, a retry after
//     initial·2ⁿ seconds (n = retries used), each delay capped at [MaxDelay];
//  4. otherwise on_exhausted: skip or stop.
//
// The wait and the attempt after it do not consume the retry budget. Once
// the class's wait is used, a retry whose backoff is shorter than a
// validated hint within max_wait_seconds waits for the hint instead (never
// earlier than the provider asked); a hint beyond the maximum leaves the
// backoff as it is, and the caller reports the hint with the failure. When
// both ResetAt and RetryAfter are valid, the later deadline is used, so that
// neither hint is violated. Evaluate is pure: it reads no clock (f.Now is
// the present) and returns an updated copy of r, never touching r's maps.
func Evaluate(doc Document, f Failure, r Route) (Decision, Route) {
	next := Route{Retries: maps.Clone(r.Retries), WaitUsed: maps.Clone(r.WaitUsed)}
	if next.Retries == nil {
		next.Retries = map[string]int{}
	}
	if next.WaitUsed == nil {
		next.WaitUsed = map[string]bool{}
	}
	stop := func(reason string) Decision {
		return Decision{Action: ActionStop, Class: f.Class, Reason: reason}
	}
	if f.Stale {
		return stop(ReasonStale), next
	}
	if f.Class == classRequest {
		return stop(ReasonRequestClass), next
	}
	cp, ok := doc.Class(f.Class)
	if !ok {
		return stop(ReasonUnclassified), next
	}
	if !f.Safe {
		d := stop(ReasonUnsafe)
		d.MaxRetries = budget(cp)
		return d, next
	}

	if wait, ok := resetWait(cp, f, next.WaitUsed[f.Class]); ok {
		next.WaitUsed[f.Class] = true
		return Decision{
			Action:     ActionWait,
			Delay:      wait,
			DelayMs:    millis(wait),
			Deadline:   f.Now.Add(wait),
			MaxRetries: budget(cp),
			Class:      f.Class,
			Reason:     ReasonResetWait,
		}, next
	}

	used := next.Retries[f.Class]
	if cp.Retry.Enabled && used < cp.Retry.MaxRetries {
		delay, reason := RetryDelay(cp.Retry.InitialIntervalSeconds, used), ReasonRetry
		if hint, ok := hintWithin(cp, f); ok && hint > delay {
			// Never earlier than the provider asked, within what the
			// policy allows to wait.
			delay, reason = hint, ReasonRetryHint
		}
		next.Retries[f.Class] = used + 1
		return Decision{
			Action:     ActionRetry,
			Delay:      delay,
			DelayMs:    millis(delay),
			Deadline:   f.Now.Add(delay),
			Attempt:    used + 1,
			MaxRetries: cp.Retry.MaxRetries,
			Class:      f.Class,
			Reason:     reason,
		}, next
	}

	action := ActionStop
	if cp.OnExhausted == OutcomeSkip {
		action = ActionSkip
	}
	return Decision{Action: action, MaxRetries: budget(cp), Class: f.Class, Reason: ReasonExhausted}, next
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

// hintWithin returns how long the failure's validated hints ask to wait
// (the later of ResetAt and RetryAfter) when reset waiting is enabled and
// that is within max_wait_seconds. A hint in the past asks for nothing; a
// hint beyond the maximum is not shortened (ok is false).
func hintWithin(cp ClassPolicy, f Failure) (time.Duration, bool) {
	if !cp.WaitForReset.Enabled || cp.WaitForReset.MaxWaitSeconds <= 0 {
		return 0, false
	}
	var wait time.Duration
	if f.ResetAt != nil && f.ResetAt.After(f.Now) {
		wait = f.ResetAt.Sub(f.Now)
	}
	if f.RetryAfter != nil && *f.RetryAfter > wait {
		wait = *f.RetryAfter
	}
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
