package classify

// CheckRule reports what is wrong with one rule on its own (its tier,
// sources, code, confidence, scope, timing extractors, fields, regular
// expressions), as Compile would: a catalogue overlay checks its rules
// with it before it is compiled, without linting the whole catalogue
// again.
func CheckRule(r Rule) []string {
	_, errs := compileRule(r, 0, true)
	return errs
}

// MatchesFixture reports whether any rule of e matches fixture f's
// evidence. A catalogue overlay compiles its own rules (and the embedded
// rules it replaces) alone and asks this of every embedded fixture: one
// that no such rule matches has the same matching rules in the merged
// catalogue as in the embedded one, hence the same verdict, and need not
// run again.
func (e *Engine) MatchesFixture(f Fixture) (bool, error) {
	ev, err := f.evidence()
	if err != nil {
		return false, err
	}
	_, matched := e.classify(&ev)
	return len(matched) > 0, nil
}

// ObservedAs returns o observed as e is (Observed with e's callback), or
// o itself when e is not observed: an engine that replaces e between
// turns (a catalogue overlay) keeps telling e's observer.
func (e *Engine) ObservedAs(o *Engine) *Engine {
	if e.observe == nil || o == nil {
		return o
	}
	return o.Observed(e.observe)
}
