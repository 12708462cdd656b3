package classify

import "regexp"

// retryNoteRe recognises an agent's note that it is retrying a failed
// request by itself: "stream disconnected - retrying sampling request (1/5
// in 193ms)…", "Retrying in 2 seconds… (attempt 1/10)", "Request failed,
// will retry", "retry 2 of 5". Such a note is a diagnostic about a failure
// the agent already handled; what it names is not the turn's own failure.
var retryNoteRe = regexp.MustCompile(`(?i)\bretrying\b|\bwill retry\b|\bretry(?:ing)? (?:in|after) \d|\b(?:attempt|retry) \d+\s*(?:/|of)\s*\d+|\(\d+/\d+(?: in [\d.]+m?s)?\)`)

// IsRetryNote reports whether a line of text is an agent's note that it
// retries by itself.
func IsRetryNote(s string) bool { return retryNoteRe.MatchString(headBytes(s, MaxScanBytes)) }

// withoutRetryNotes returns the lines that are not retry notes.
func withoutRetryNotes(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if !IsRetryNote(l) {
			out = append(out, l)
		}
	}
	return out
}
