package classify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Finding is one Lint result.
type Finding struct {
	Rule    string `json:"rule,omitempty"`
	Fixture string `json:"fixture,omitempty"`
	Problem string `json:"problem"`
}

func (f Finding) String() string {
	switch {
	case f.Fixture != "":
		return fmt.Sprintf("fixture %q: %s", f.Fixture, f.Problem)
	case f.Rule != "":
		return fmt.Sprintf("rule %q: %s", f.Rule, f.Problem)
	}
	return f.Problem
}

// Lint checks a catalogue without requiring it to compile: malformed rules
// (unknown code, i.e. a code without a class; bad regex; unknown adapter or
// source; duplicate id), fixtures naming unknown rules or with undecodable
// evidence, rules without a positive or a negative fixture, and unreachable
// rules (no positive fixture is won by the rule), and rules that could
// decide another rule's positive fixture with a different class
// (crossClass).
func Lint(c Catalogue) []Finding {
	e, errs := compile(c)
	var out []Finding
	for _, msg := range errs {
		out = append(out, Finding{Problem: msg})
	}
	return append(out, e.lint()...)
}

// Lint reports the findings of Lint for the engine's catalogue; a compiled
// engine has none.
func (e *Engine) Lint() []Finding { return e.lint() }

func (e *Engine) lint() []Finding {
	var out []Finding
	pos := map[string]int{}
	neg := map[string]int{}
	won := map[string]bool{}
	names := map[string]bool{}
	collided := map[string]bool{} // "rule other": a positive fixture of rule that other matched
	for i, f := range e.cat.Fixtures {
		name := fixtureName(f, i)
		if names[name] {
			out = append(out, Finding{Fixture: name, Problem: "duplicate fixture name"})
		}
		names[name] = true
		if _, ok := e.byID[f.Rule]; !ok {
			if !e.declared(f.Rule) {
				out = append(out, Finding{Fixture: name, Problem: fmt.Sprintf("names unknown rule %q", f.Rule)})
			}
			continue
		}
		ev, err := f.evidence()
		if err != nil {
			out = append(out, Finding{Fixture: name, Problem: err.Error()})
			continue
		}
		if f.Match {
			pos[f.Rule]++
			v, matched := e.classify(&ev)
			if v.Rule == f.Rule {
				won[f.Rule] = true
			}
			for _, m := range matched {
				collided[f.Rule+" "+m.ID] = true
			}
			out = append(out, e.crossClass(f, name, matched)...)
			if st := newView(&ev).status().code; st != 0 {
				collided[fmt.Sprintf("%s status %d", f.Rule, st)] = true
			}
		} else {
			neg[f.Rule]++
		}
	}
	for _, r := range e.rules {
		if pos[r.ID] == 0 {
			out = append(out, Finding{Rule: r.ID, Problem: "no positive fixture"})
		} else if !won[r.ID] {
			out = append(out, Finding{Rule: r.ID, Problem: "unreachable: no positive fixture is classified by this rule"})
		}
		if neg[r.ID] == 0 {
			out = append(out, Finding{Rule: r.ID, Problem: "no negative fixture"})
		}
		for _, st := range r.OverridesStatus {
			if !collided[fmt.Sprintf("%s status %d", r.ID, st)] {
				out = append(out, Finding{Rule: r.ID, Problem: fmt.Sprintf("overridesStatus %d without a collision fixture (a positive fixture with that status)", st)})
			}
		}
		for _, id := range r.Outranks {
			if !collided[r.ID+" "+id] {
				out = append(out, Finding{Rule: r.ID, Problem: fmt.Sprintf("outranks %q without a collision fixture (a positive fixture both rules match)", id)})
			}
		}
	}
	return out
}

// crossClass reports the rules that could decide a positive fixture of
// another rule with a different class: rules below the status tier that
// match it, say another class than the fixture expects, are not outranked
// by a rule that matched, and are not General beside a specific match.
// Such a rule is a wrong class waiting for the fixture's rule to be
// vetoed or reordered; the engine already makes the evidence a conflict,
// and the lint names the rule so the catalogue says which is more
// specific (outranks, with this fixture), narrows one (veto) or marks
// the broad one General.
func (e *Engine) crossClass(f Fixture, name string, matched []*compiledRule) []Finding {
	own := e.byID[f.Rule]
	want := ClassOf(own.Code)
	if f.Code != "" {
		want = ClassOf(f.Code)
	}
	specific := false
	for _, m := range matched {
		if m.Tier < TierStatus && !m.General && !outranked(m, matched) {
			specific = true
		}
	}
	// Two general rules that disagree are settled by a status of the
	// fixture's class (statusBreaksTie).
	statusAgrees := false
	for _, m := range matched {
		if m.Tier == TierStatus && m.httpSet != nil && ClassOf(m.Code) == want {
			statusAgrees = true
		}
	}
	var out []Finding
	for _, m := range matched {
		// A general rule yields to a specific one, and to a status it
		// disagrees with (decideView).
		if m == own || m.Tier == TierStatus || ClassOf(m.Code) == want || outranked(m, matched) || (m.General && (specific || own.Tier == TierStatus || (own.General && statusAgrees))) {
			continue
		}
		out = append(out, Finding{Rule: m.ID, Fixture: name, Problem: fmt.Sprintf(
			"can classify fixture %q of rule %q as %s (class %s, the fixture's is %s): declare which rule is more specific (outranks, with this fixture as the collision fixture), add a veto, or mark the broader rule general", name, f.Rule, m.Code, ClassOf(m.Code), want)})
	}
	return out
}

// declared reports whether id is a rule of the catalogue, compiled or not.
func (e *Engine) declared(id string) bool {
	for _, r := range e.cat.Rules {
		if r.ID == id {
			return true
		}
	}
	return false
}

func fixtureName(f Fixture, i int) string {
	if f.Name != "" {
		return f.Name
	}
	return fmt.Sprintf("#%d (%s)", i, f.Rule)
}

// evidence decodes the fixture's evidence strictly and pins its clock.
func (f Fixture) evidence() (Evidence, error) {
	var ev Evidence
	dec := json.NewDecoder(bytes.NewReader(f.Evidence))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return ev, fmt.Errorf("evidence: %v", err)
	}
	if !knownSource(ev.Source) {
		return ev, fmt.Errorf("evidence.source %q: unknown source", ev.Source)
	}
	ev.Now = DefaultFixtureNow
	if f.Now != "" {
		t, err := time.Parse(time.RFC3339Nano, f.Now)
		if err != nil {
			return ev, fmt.Errorf("now: %v", err)
		}
		ev.Now = t
	}
	return ev, nil
}

// Report is the result of running a catalogue's fixtures.
type Report struct {
	Version  string       `json:"version"`
	Rules    []RuleReport `json:"rules"`
	Fixtures int          `json:"fixtures"`
	Failed   int          `json:"failed"`
}

// RuleReport is one rule's fixture results.
type RuleReport struct {
	Rule      string   `json:"rule"`
	Positives int      `json:"positives"`
	Negatives int      `json:"negatives"`
	Failures  []string `json:"failures,omitempty"`
}

// OK reports whether every fixture passed.
func (r Report) OK() bool { return r.Failed == 0 }

// Test runs every fixture. A positive fixture passes when its rule wins,
// no other rule of the same tier matches it (collision), and its timing
// expectations hold; a negative one when its rule does not match it and,
// if it names a code, the verdict has that code.
func (e *Engine) Test() Report {
	rep := Report{Version: e.cat.Version}
	byRule := map[string]*RuleReport{}
	for _, r := range e.rules {
		rr := &RuleReport{Rule: r.ID}
		byRule[r.ID] = rr
	}
	for i, f := range e.cat.Fixtures {
		rep.Fixtures++
		name := fixtureName(f, i)
		rr := byRule[f.Rule]
		if rr == nil {
			rr = &RuleReport{Rule: f.Rule}
			byRule[f.Rule] = rr
		}
		if f.Match {
			rr.Positives++
		} else {
			rr.Negatives++
		}
		if msg := e.runFixture(f); msg != "" {
			rr.Failures = append(rr.Failures, name+": "+msg)
			rep.Failed++
		}
	}
	for _, rr := range byRule {
		rep.Rules = append(rep.Rules, *rr)
	}
	order := map[string]int{}
	for i, r := range e.rules {
		order[r.ID] = i
	}
	sort.SliceStable(rep.Rules, func(i, j int) bool {
		oi, iok := order[rep.Rules[i].Rule]
		oj, jok := order[rep.Rules[j].Rule]
		if iok != jok {
			return iok
		}
		if oi != oj {
			return oi < oj
		}
		return rep.Rules[i].Rule < rep.Rules[j].Rule
	})
	return rep
}

// runFixture returns "" when f passes, else what went wrong.
func (e *Engine) runFixture(f Fixture) string {
	r, ok := e.byID[f.Rule]
	if !ok {
		return fmt.Sprintf("unknown rule %q", f.Rule)
	}
	ev, err := f.evidence()
	if err != nil {
		return err.Error()
	}
	v, matched := e.classify(&ev)
	if !f.Match {
		for _, m := range matched {
			if m.ID == f.Rule {
				return "rule matched a negative fixture"
			}
		}
		if f.Code != "" && v.Code != f.Code {
			return fmt.Sprintf("got code %s (rule %q), want %s", v.Code, v.Rule, f.Code)
		}
		return ""
	}
	if v.Rule != f.Rule {
		return fmt.Sprintf("got rule %q (code %s, reason %q), want %q", v.Rule, v.Code, v.Reason, f.Rule)
	}
	for _, m := range matched {
		if ordered(r.Tier) {
			break // the table's order decides; an earlier match would have won
		}
		if m.ID != r.ID && m.rank() == r.rank() && !r.beats[m.ID] {
			return fmt.Sprintf("collision: rule %q of the same rank also matches and %q does not declare it outranks it", m.ID, r.ID)
		}
	}
	if f.Code != "" && v.Code != f.Code {
		return fmt.Sprintf("got code %s, want %s", v.Code, f.Code)
	}
	if f.RetryAfterMs != nil {
		if v.RetryAfter == nil {
			return fmt.Sprintf("got no retryAfter, want %dms", *f.RetryAfterMs)
		}
		if got := v.RetryAfter.Milliseconds(); got != *f.RetryAfterMs {
			return fmt.Sprintf("got retryAfter %dms, want %dms", got, *f.RetryAfterMs)
		}
	}
	if f.ResetAt != "" {
		want, err := time.Parse(time.RFC3339Nano, f.ResetAt)
		if err != nil {
			return fmt.Sprintf("resetAt: %v", err)
		}
		if v.ResetAt == nil {
			return fmt.Sprintf("got no resetAt, want %s", f.ResetAt)
		}
		if !v.ResetAt.Equal(want) {
			return fmt.Sprintf("got resetAt %s, want %s", v.ResetAt.Format(time.RFC3339), f.ResetAt)
		}
	}
	return ""
}
