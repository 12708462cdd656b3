package classify

import (
	"regexp"
	"strings"
	"testing"
)

func TestPrefilterLiterals(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		want    string // joined by |, "" for none
	}{
		{`(?i)\bAPI Error: 529\b|\boverloaded_error\b`, "api error: 529|overloaded_error"},
		{`(?i)exceeded retry limit, last status: 5\d\d\b`, "exceeded retry limit, last status: 5"},
		{`\bECONNREFUSED\b|(?i)\bconnection refused\b`, "econnrefused|connection refused"},
		{`(?i)\b(?:status|http)[: =]+429\b`, "status|http"},
		{`a|b+`, ""},        // too short
		{`x*yz`, ""},        // too short
		{`(?:foo)?bar`, ""}, // "bar" is required but 3 chars: kept
		{`[a-z]+`, ""},
	} {
		got := strings.Join(prefilterLiterals(tt.pattern), "|")
		if tt.pattern == `(?:foo)?bar` {
			tt.want = "bar"
		}
		if got != tt.want {
			t.Errorf("prefilterLiterals(%q): got %q, want %q", tt.pattern, got, tt.want)
		}
	}
}

// TestPrefilterNeverRejectsAMatch checks the prefilter against the regex
// on texts that match it.
func TestPrefilterNeverRejectsAMatch(t *testing.T) {
	for _, tt := range []struct{ pattern, text string }{
		{`(?i)\bAPI Error: 529\b|\boverloaded_error\b`, "Internal error: api error: 529 Overloaded"},
		{`(?i)\bAPI Error: 529\b|\boverloaded_error\b`, `{"type":"OVERLOADED_ERROR"}`},
		{`(?i)limit reached\s*[∙·•|-]?\s*resets\b`, "5-hour LIMIT REACHED ∙ resets 3pm"},
		{`(?i)\b(?:status|http)[: =]+429\b`, "HTTP 429"},
	} {
		lits := prefilterLiterals(tt.pattern)
		if !regexp.MustCompile(tt.pattern).MatchString(tt.text) {
			t.Fatalf("%q does not match %q", tt.pattern, tt.text)
		}
		lower := strings.ToLower(tt.text)
		found := lits == nil
		for _, l := range lits {
			found = found || strings.Contains(lower, l)
		}
		if !found {
			t.Errorf("prefilter %q rejects %q, which %q matches", lits, tt.text, tt.pattern)
		}
	}
}
