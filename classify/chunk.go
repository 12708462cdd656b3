package classify

import "fmt"

// ControlChunk is the control-chunk test of a prefix rule, handed to the
// observers so that the projection that suppresses a chunk and the
// classifier that names it share one definition (seed 000: "both layers
// share the case-insensitive prefix, Unicode trim, and byte bound"; the
// vetoes too).
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
// adapter-scoped rule with a prefix condition on message chunks.
func (e *Engine) ControlChunk(id string) (ControlChunk, error) {
	r, ok := e.byID[id]
	switch {
	case !ok:
		return ControlChunk{}, fmt.Errorf("control chunk: %w %q", ErrUnknownRule, id)
	case r.prefix == nil || r.Adapter == AnyAdapter || !r.sources[SourceMessageChunk]:
		return ControlChunk{}, fmt.Errorf("control chunk: rule %q is not an adapter-scoped prefix rule for message chunks", id)
	}
	return ControlChunk{Rule: r.ID, Adapter: r.Adapter, Prefix: r.prefix.Prefix, Match: r.matchChunk}, nil
}

// matchChunk is the rule's prefix test and vetoes over chunk text alone.
func (r *compiledRule) matchChunk(text string) bool {
	if !prefixMatches(text, r.prefix) {
		return false
	}
	for _, veto := range r.vetoes {
		if veto.MatchString(text) {
			return false
		}
	}
	return true
}
