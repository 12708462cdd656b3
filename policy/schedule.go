package policy

import (
	"fmt"
	"strings"
	"time"
)

// Schedule describes in one line what the policy of class implies, e.g.
// "retry after 5s, 10s, 20s, then skip; wait for a trusted reset up to
// 5m0s (once)" or "stop immediately". A class that is not configurable
// ("request", "unclassified", anything else) always stops.
func (d Document) Schedule(class string) string {
	cp, ok := d.Class(class)
	if !ok {
		return "stop immediately (not configurable)"
	}
	var b strings.Builder
	switch {
	case cp.Retry.Enabled && cp.Retry.MaxRetries > 0:
		b.WriteString("retry after ")
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

// Describe describes the whole document, one line per class and one for
// the fallback models when there are any:
//
//	transient: retry after 5s, 10s, 20s, then skip; wait for a trusted reset up to 5m0s (once)
//	hard: stop immediately
//	fallback models: model-b, model-c
func (d Document) Describe() string {
	lines := []string{
		classTransient + ": " + d.Schedule(classTransient),
		classHard + ": " + d.Schedule(classHard),
	}
	if len(d.FallbackModels) > 0 {
		lines = append(lines, "fallback models: "+strings.Join(d.FallbackModels, ", "))
	}
	if d.Request.CompactThenRetry {
		lines = append(lines, "context overflow: the agent's compaction command, then one retry")
	}
	return strings.Join(lines, "\n") + "\n"
}
