package classify

import (
	"fmt"
	"strings"
)

// ControlChunk is the control-chunk test of a prefix rule, handed to the
// observers so that the projection that suppresses a chunk and the
// classifier that names it share one definition: the case-insensitive
// prefix, the Unicode trim, the byte bound and the vetoes.
type ControlChunk struct {
	Rule    string // the catalogue rule
	Adapter string // the only adapter it applies to
	Prefix  string // for the observers' cheap prefilter
	// Match reports whether a whole chunk's text is a control chunk: the
	// prefix after Unicode trim, a non-empty suffix within the rule's
	// byte bound, and none of the rule's vetoes.
	Match func(text string) bool
}

// ControlChunk returns the control-chunk test of rule id, which must be an
// adapter-scoped rule with a prefix condition on message chunks. An id
// ending in "*" names the group of rules whose ids start with what comes
// before it: a chunk is a control chunk when any of them matches it (an
// agent that reports every failure as "Error: …" text, each kind of
// failure its own rule); the group must share adapter and prefix.
func (e *Engine) ControlChunk(id string) (ControlChunk, error) {
	var group []*compiledRule
	if stem, ok := strings.CutSuffix(id, "*"); ok {
		for _, r := range e.rules {
			if strings.HasPrefix(r.ID, stem) {
				group = append(group, r)
			}
		}
	} else if r, ok := e.byID[id]; ok {
		group = append(group, r)
	}
	if len(group) == 0 {
		return ControlChunk{}, fmt.Errorf("control chunk: %w %q", ErrUnknownRule, id)
	}
	first := group[0]
	for _, r := range group {
		switch {
		case r.prefix == nil || r.Adapter == AnyAdapter || !r.sources[SourceMessageChunk]:
			return ControlChunk{}, fmt.Errorf("control chunk: rule %q is not an adapter-scoped prefix rule for message chunks", r.ID)
		case r.Adapter != first.Adapter || !strings.EqualFold(r.prefix.Prefix, first.prefix.Prefix):
			return ControlChunk{}, fmt.Errorf("control chunk: rules %q and %q of group %q differ in adapter or prefix", first.ID, r.ID, id)
		}
	}
	match := func(text string) bool {
		for _, r := range group {
			if r.matchChunk(text) {
				return true
			}
		}
		return false
	}
	if len(group) == 1 {
		match = first.matchChunk
	}
	return ControlChunk{Rule: id, Adapter: first.Adapter, Prefix: first.prefix.Prefix, Match: match}, nil
}

// matchChunk is the rule's prefix test, its regex (if any) and its vetoes
// over chunk text alone.
func (r *compiledRule) matchChunk(text string) bool {
	if !prefixMatches(text, r.prefix) {
		return false
	}
	if r.re != nil && !r.re.MatchString(headBytes(text, MaxScanBytes)) {
		return false
	}
	for _, veto := range r.vetoes {
		if veto.MatchString(text) {
			return false
		}
	}
	return true
}
