package classify

import (
	"regexp"
	"regexp/syntax"
	"sync"
)

// Regular expressions are compiled at their first use, not at start: a
// compiled catalogue's patterns take megabytes, and a session whose turns
// all succeed never runs one. A failed turn compiles only the patterns
// its text gets to (a rule's literal prefilter comes first).

// lazyRegexp returns a function that compiles src on its first call and
// returns the same *regexp.Regexp on every call. src must be valid (the
// package's own patterns, checked by its tests).
func lazyRegexp(src string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(src) })
}

// pattern is a catalogue rule's regular expression: validated when the
// catalogue is compiled (parsed with the flags regexp.Compile uses, which
// is where regexp.Compile's errors come from), compiled at its first run.
// Safe for concurrent use.
type pattern struct {
	src     string
	once    sync.Once
	re      *regexp.Regexp
	litOnce sync.Once
	lits    []string
}

// newPattern returns the pattern of src, checking it first when check
// is set.
func newPattern(src string, check bool) (*pattern, error) {
	if check {
		if _, err := syntax.Parse(src, syntax.Perl); err != nil {
			return nil, err
		}
	}
	return &pattern{src: src}, nil
}

// literals are the pattern's prefilter (prefilterLiterals), derived at
// their first use.
func (p *pattern) literals() []string {
	p.litOnce.Do(func() { p.lits = prefilterLiterals(p.src) })
	return p.lits
}

func (p *pattern) get() *regexp.Regexp {
	p.once.Do(func() { p.re = regexp.MustCompile(p.src) })
	return p.re
}

// MatchString reports whether s holds a match.
func (p *pattern) MatchString(s string) bool { return p.get().MatchString(s) }

// FindStringIndex is regexp.Regexp.FindStringIndex.
func (p *pattern) FindStringIndex(s string) []int { return p.get().FindStringIndex(s) }
