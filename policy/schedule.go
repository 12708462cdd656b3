package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Schedule describes in one line what the policy of class implies, e.g.
// "retry after up to 5s, 10s, 20s, then skip; wait for a trusted reset up
// to 5m0s (once)" or "stop immediately". Each delay is the backoff a
// full-jitter draw cannot exceed (and a provider's hint raises). A class
// that is not configurable ("request", "unclassified", anything else)
// always stops.
func (d Document) Schedule(class string) string {
	cp, ok := d.Class(class)
	if !ok {
		return "stop immediately (not configurable)"
	}
	return cp.Schedule()
}

// Schedule describes in one line what a class policy (or a per-code
// override) implies.
func (cp ClassPolicy) Schedule() string {
	var b strings.Builder
	switch {
	case cp.Retry.Enabled && cp.Retry.MaxRetries > 0:
		b.WriteString("retry after up to ")
		for n := range cp.Retry.MaxRetries {
			if n > 0 {
				b.WriteString(", ")
			}
			b.WriteString(RetryDelay(cp.Retry.InitialIntervalSeconds, n).String())
		}
		fmt.Fprintf(&b, ", then %s", cp.OnExhausted)
	case cp.WaitForReset.Enabled:
		fmt.Fprintf(&b, "no retry, then %s", cp.OnExhausted)
	default:
		fmt.Fprintf(&b, "%s immediately", cp.OnExhausted)
	}
	if cp.WaitForReset.Enabled {
		wait := time.Duration(cp.WaitForReset.MaxWaitSeconds) * time.Second
		fmt.Fprintf(&b, "; wait for a trusted reset up to %s (once)", wait)
	}
	return b.String()
}

// retries reports whether any policy of the document retries or waits.
func (d Document) retries() bool {
	cps := []ClassPolicy{d.Transient, d.Hard}
	for _, cp := range d.Codes {
		cps = append(cps, cp)
	}
	for _, cp := range cps {
		if cp.Retry.Enabled || cp.WaitForReset.Enabled {
			return true
		}
	}
	return false
}

// Describe describes the whole document, one line per class, one per
// per-code override, and one for the fallback models when there are any:
//
//	transient: retry after up to 5s, 10s, 20s, then skip; wait for a trusted reset up to 5m0s (once)
//	hard: stop immediately
//	code quota_limited: retry after up to 1m0s, then skip
//	fallback models: model-b, model-c
//
// When anything retries or waits, a last line says what no policy
// changes: no retry before a provider's validated hint, and auth and
// credential failures never retried (seed 004).
func (d Document) Describe() string {
	lines := []string{
		classTransient + ": " + d.Schedule(classTransient),
		classHard + ": " + d.Schedule(classHard),
	}
	for _, code := range slices.Sorted(maps.Keys(d.Codes)) {
		lines = append(lines, "code "+code+": "+d.Codes[code].Schedule())
	}
	if len(d.FallbackModels) > 0 {
		lines = append(lines, "fallback models: "+strings.Join(d.FallbackModels, ", "))
	}
	if d.Request.CompactThenRetry {
		lines = append(lines, "context overflow: the agent's compaction command, then one retry")
	}
	if d.retries() {
		lines = append(lines, "always: no retry before a provider's retry-after or reset; auth and credential failures never retried")
	}
	return strings.Join(lines, "\n") + "\n"
}
