package classify

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Reasons an evidence envelope is unclassified.
const (
	ReasonNoMatch  = "no_match"
	ReasonStale    = "stale"
	ReasonConflict = "conflict"
	// ReasonClientClosed: the agent exited after the client closed its
	// input (a guard-made verdict; no rule produces it).
	ReasonClientClosed = "client_closed"
)

// Engine classifies evidence with a compiled catalogue. It is immutable and
// safe for concurrent use.
type Engine struct {
	cat     Catalogue
	rules   []*compiledRule // ordered by rank, then catalogue order
	byID    map[string]*compiledRule
	observe func(Evidence, Verdict) // see Observed
}

// Observed returns an engine that classifies like e and then calls fn with
// each evidence envelope and its verdict, on the caller's goroutine: how
// `acp-guard classify --transcript` sees exactly what the live pipeline
// classified. e itself is unchanged.
func (e *Engine) Observed(fn func(Evidence, Verdict)) *Engine {
	c := *e
	c.observe = fn
	return &c
}

// Compile validates a catalogue and prepares it for classification. It
// fails when any rule is malformed (bad ID, unknown code, adapter, source,
// timing extractor, scope or confidence; a regex that is not RE2), when IDs
// repeat, and when Lint reports anything (missing fixtures, fixtures naming
// unknown rules, unreachable rules). Fixture pass/fail is Test's business.
func Compile(c Catalogue) (*Engine, error) {
	e, errs := compile(c)
	if len(errs) == 0 {
		for _, f := range e.lint() {
			errs = append(errs, f.String())
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("catalogue %q: %d problem(s): %s", c.Version, len(errs), strings.Join(errs, "; "))
	}
	return e, nil
}

// CompileRules is Compile without Lint, for a catalogue whose fixtures
// were checked before it was built in (catalogue.Default): its fixtures
// are neither needed nor read, and nothing is classified to compile it.
func CompileRules(c Catalogue) (*Engine, error) {
	e, errs := compileWith(c, false)
	if len(errs) > 0 {
		return nil, fmt.Errorf("catalogue %q: %d problem(s): %s", c.Version, len(errs), strings.Join(errs, "; "))
	}
	return e, nil
}

// compile builds an engine from the rules that compile and reports the
// others; the engine is usable for linting even when errs is not empty.
func compile(c Catalogue) (*Engine, []string) { return compileWith(c, true) }

// compileWith is compile; without check, rule ids and regular
// expressions are taken as valid (a catalogue whose tests checked them:
// CompileRules), which spares parsing every pattern at start.
func compileWith(c Catalogue, check bool) (*Engine, []string) {
	var errs []string
	if strings.TrimSpace(c.Version) == "" {
		errs = append(errs, "version: empty")
	}
	e := &Engine{cat: c, byID: map[string]*compiledRule{}}
	for i, r := range c.Rules {
		cr, rerrs := compileRule(r, i, check)
		errs = append(errs, rerrs...)
		if _, dup := e.byID[r.ID]; dup {
			errs = append(errs, fmt.Sprintf("rule %q: duplicate id", r.ID))
			continue
		}
		if len(rerrs) == 0 {
			e.rules = append(e.rules, cr)
			e.byID[r.ID] = cr
		}
	}
	sort.SliceStable(e.rules, func(i, j int) bool { return e.rules[i].rank() < e.rules[j].rank() })
	errs = append(errs, e.checkOutranks()...)
	return e, errs
}

// checkOutranks validates the declared specificity: every rule named
// exists and is not a status rule (overridesStatus says that), and no
// two rules outrank each other.
func (e *Engine) checkOutranks() []string {
	var errs []string
	for _, r := range e.rules {
		for _, id := range r.Outranks {
			o, ok := e.byID[id]
			switch {
			case !ok:
				errs = append(errs, fmt.Sprintf("rule %q: outranks unknown rule %q", r.ID, id))
			case o.Tier == TierStatus:
				errs = append(errs, fmt.Sprintf("rule %q: outranks status rule %q (declare overridesStatus instead)", r.ID, id))
			case o.rank() < r.rank() && r.Tier == TierStatus:
				errs = append(errs, fmt.Sprintf("rule %q: a status rule cannot outrank %q", r.ID, id))
			case o.beats[r.ID]:
				errs = append(errs, fmt.Sprintf("rule %q: outranks %q, which outranks it", r.ID, id))
			}
		}
	}
	return errs
}

// Version is the catalogue version stamped on every verdict.
func (e *Engine) Version() string { return e.cat.Version }

// Rules returns the rules in evaluation order.
func (e *Engine) Rules() []Rule {
	out := make([]Rule, len(e.rules))
	for i, r := range e.rules {
		out[i] = r.Rule
	}
	return out
}

// Rule returns the rule with the given ID.
func (e *Engine) Rule(id string) (Rule, bool) {
	r, ok := e.byID[id]
	if !ok {
		return Rule{}, false
	}
	return r.Rule, true
}

// Catalogue returns the catalogue the engine was compiled from.
func (e *Engine) Catalogue() Catalogue { return e.cat }

// Classify returns the verdict for ev. Precedence, most specific first:
// typed structure (tier 1) > signatures (tier 2) > intent phrases (tier 3)
// > the HTTP status (tier 4); within a tier, rules scoped to the agent's
// adapter before rules for any adapter, then catalogue order. A rule that
// another matched rule declares it outranks drops out, whatever the tiers;
// a General rule drops out beside a specific rule of another class. The
// first remaining rule wins when every remaining rule below the status
// tier agrees with it on the class; two kinds that disagree are a
// conflict. The winner may refine what the evidence's HTTP status means
// within its class, and change the class only for statuses it declares
// (OverridesStatus); otherwise the evidence is conflicting — except that a
// General winner yields to the status. Conflicts are unclassified with
// Reason conflict and Conflicts naming the rules. Stale evidence and
// evidence no rule matches are unclassified too. The result depends only
// on ev (including ev.Now) and the catalogue.
func (e *Engine) Classify(ev Evidence) Verdict {
	v, _ := e.classify(&ev)
	if e.observe != nil {
		e.observe(ev, v)
	}
	return v
}

// classify also returns every rule that matched, in evaluation order, for
// fixture collision checks.
//
// Evidence is ranked (docs/CATALOGUE.md, "Precedence"): 1 the agent's
// report for the request — its JSON-RPC error (code, message, data, a
// status inside the text), or the exit and its summary; 2 the turn's error
// text in message chunks (Evidence.Chunk); 3 stderr. The highest rank
// whose evidence a rule recognises decides. A lower rank only refines that
// verdict, and only when it is about the same failure: the verdict came
// from a phrase or a status (typed structure and signatures are final),
// and the refinement keeps both its class and its kind (SameKind: a
// provider that answered with a status is not refined into a connection
// that never reached it). Stderr's retry notes never refine: they name
// failures the agent already handled. When no rank speaks alone, the
// report and stderr are read together (a status in one, its words in the
// other), as the unclassified fallback.
func (e *Engine) classify(ev *Evidence) (Verdict, []*compiledRule) {
	if len(ev.Stderr) == 0 && ev.Chunk == "" {
		return e.decideView(newView(ev))
	}
	report := *ev
	report.Chunk, report.Stderr = "", nil
	v, all := e.decideView(newView(&report))
	base := &report // the evidence that decided, which lower ranks refine
	var chunk Evidence
	if ev.Chunk != "" {
		chunk = Evidence{Source: SourceMessageChunk, Adapter: ev.Adapter, Message: ev.Chunk, Headers: ev.Headers,
			Phase: ev.Phase, Generation: ev.Generation, Stale: ev.Stale, Now: ev.Now}
		if v.Rule == "" {
			if cv, call := e.decideText(&chunk); cv.Rule != "" {
				v, all, base = cv, call, &chunk
			}
		} else {
			both := report
			both.Message = joinText(report.Message, ev.Chunk)
			v, all = e.refine(v, all, &both)
		}
	}
	if v.Rule == "" {
		full := *ev
		full.Chunk = ""
		return e.decideView(newView(&full))
	}
	if len(ev.Stderr) == 0 {
		return v, all
	}
	refined := *base
	refined.Stderr = withoutRetryNotes(ev.Stderr)
	return e.refine(v, all, &refined)
}

// decideText classifies text an agent printed (a chunk) as a message
// chunk, and as an error message when no chunk rule speaks (ClassifyText).
func (e *Engine) decideText(ev *Evidence) (Verdict, []*compiledRule) {
	vw := newView(ev)
	v, all := e.decideView(vw)
	if v.Rule != "" || v.Reason == ReasonStale || vw.docLayout() {
		return v, all // reference text stays prose when read as an error message too (mention.go)
	}
	alt := *ev
	alt.Source = SourceRPCError
	if av, aall := e.decideView(newView(&alt)); av.Rule != "" {
		return av, aall
	}
	return v, all
}

// refine returns the verdict of lower (the deciding evidence with a
// lower rank's added) when it may replace v: v came from a phrase or a
// status, another rule decides lower, and it keeps v's class and kind.
func (e *Engine) refine(v Verdict, all []*compiledRule, lower *Evidence) (Verdict, []*compiledRule) {
	if len(all) == 0 || all[0].Tier < TierPhrase {
		return v, all
	}
	if fv, fall := e.decideView(newView(lower)); fv.Rule != "" && fv.Rule != v.Rule && fv.Class == v.Class && SameKind(fv.Code, v.Code) {
		return fv, fall
	}
	return v, all
}

// joinText appends b to a on a line of its own.
func joinText(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

// decideView classifies one view of the evidence.
func (e *Engine) decideView(vw *view) (Verdict, []*compiledRule) {
	ev := vw.ev
	unclassified := func(reason string) Verdict {
		return Verdict{
			Code:             CodeUnclassified,
			Class:            ClassUnclassified,
			Confidence:       "low",
			Scope:            "unknown",
			CatalogueVersion: e.cat.Version,
			SafeExcerpt:      Sanitize(excerptText(vw)),
			Reason:           reason,
		}
	}
	var all []*compiledRule
	for _, r := range e.rules {
		if r.matches(vw) {
			all = append(all, r)
		}
	}
	if ev.Stale {
		return unclassified(ReasonStale), all
	}
	if len(all) == 0 {
		return unclassified(ReasonNoMatch), all
	}
	win, conflicts := decide(all)
	if win == nil {
		win, conflicts = statusBreaksTie(all, conflicts, vw.status())
	}
	if win != nil {
		if st := vw.status(); st.origin != StatusFromName || len(win.fields) == 0 {
			// A winner that reads the provider's own field (error.code
			// model_not_found) is not vetoed by a status derived from a
			// type name (invalid_request_error → 400): a conflict is
			// between equals.
			conflicts = statusConflict(win, all, st.code)
		}
		if len(conflicts) == 2 && win.General {
			// A general rule is no more specific than the status it
			// disagrees with ("Server returned 401 — the endpoint may be
			// temporarily unavailable"): the status decides.
			win, conflicts = ruleByID(all, conflicts[1]), nil
		}
	}
	if len(conflicts) > 0 {
		v := unclassified(ReasonConflict)
		v.Conflicts = conflicts
		return v, all
	}
	v := Verdict{
		Code:             win.Code,
		Class:            ClassOf(win.Code),
		Confidence:       win.Confidence,
		Scope:            win.Scope,
		Rule:             win.ID,
		CatalogueVersion: e.cat.Version,
		SafeExcerpt:      Sanitize(win.excerpt(vw)),
	}
	v.RetryAfter, v.ResetAt = extractTiming(win.Timing, vw, ev.Now)
	if v.Code == CodeRateLimited && lifting(v, ev.Now) >= QuotaAfter {
		// A rate limit that lifts only after hours is a quota: retrying on
		// a short schedule cannot succeed (Copilot's "try again in 58
		// hours", Azure's Retry-After 86400).
		v.Code, v.Class, v.Scope = CodeQuotaLimited, ClassHard, "account"
	}
	return v, all
}

// QuotaAfter is how far away a rate limit's validated reset must be for
// the verdict to be quota_limited instead.
const QuotaAfter = time.Hour

// lifting returns how long until the verdict's hint says the limit lifts
// (0 without a hint).
func lifting(v Verdict, now time.Time) time.Duration {
	var d time.Duration
	if v.RetryAfter != nil {
		d = *v.RetryAfter
	}
	if v.ResetAt != nil {
		d = max(d, v.ResetAt.Sub(now))
	}
	return d
}

// decide picks the winner among the matched rules (in evaluation order).
// A rule another matched rule declares it outranks drops out, whatever
// their tiers (Outranks is a reviewed statement of specificity with a
// collision fixture), and a General rule drops out when a rule that is
// not general matched below the status tier. Of the rest, the strongest by rank wins — in the
// ordered tiers the first in catalogue order — when every remaining rule
// below the status tier agrees with it on the class. Two kinds that
// disagree (a phrase and a typed code, two phrases, two signatures) are a
// conflict: win is nil and conflicts holds the winner and the rules that
// disagree with it. Status rules never conflict here; statusConflict
// weighs the status against the winner.
func decide(all []*compiledRule) (win *compiledRule, conflicts []string) {
	var live []*compiledRule
	for _, r := range all {
		if !outranked(r, all) {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		// Unreachable with a compiled catalogue (no mutual outranking);
		// fall back to evaluation order.
		live = all
	}
	win = live[0]
	if win.General {
		// A general winner stays when what else matched agrees with it
		// (the order of the table picks the code); a specific rule of
		// another class refines it.
		for _, r := range live[1:] {
			if r.Tier < TierStatus && !r.General && ClassOf(r.Code) != ClassOf(win.Code) {
				win = firstSpecific(live)
				break
			}
		}
	}
	for _, r := range live {
		if r == win || r.Tier == TierStatus || (r.General && !win.General) {
			continue
		}
		if ClassOf(r.Code) != ClassOf(win.Code) {
			conflicts = append(conflicts, r.ID)
		}
	}
	if len(conflicts) > 0 {
		return nil, append([]string{win.ID}, conflicts...)
	}
	return win, nil
}

// firstSpecific returns the first rule of rs below the status tier that
// is not General (the caller knows there is one).
func firstSpecific(rs []*compiledRule) *compiledRule {
	for _, r := range rs {
		if r.Tier < TierStatus && !r.General {
			return r
		}
	}
	return rs[0]
}

// statusConflict checks the winner against the evidence's HTTP status: the
// first status-tier rule that matched says what the status alone means. A
// more specific winner may refine the code within the status's class; it
// may change the class only for the statuses it declares in
// OverridesStatus. Otherwise the two rules are a conflict.
func statusConflict(win *compiledRule, all []*compiledRule, status int) []string {
	if win.Tier == TierStatus {
		return nil
	}
	for _, r := range all {
		if r.httpSet == nil {
			continue // only a rule that reads the status says what it means
		}
		if ClassOf(r.Code) == ClassOf(win.Code) || win.changes[status] {
			return nil
		}
		return []string{win.ID, r.ID}
	}
	return nil
}

// statusBreaksTie settles a conflict between general rules only (each
// states a broad kind: a wrapper's "APIConnectionError" beside "invalid
// params") by the status the evidence carries as such — an envelope's, a
// status field's, not one read from the words or a name: the general rule
// of the status's class wins. A conflict that involves a specific rule, or
// where no status speaks, stays a conflict.
func statusBreaksTie(all []*compiledRule, conflicts []string, st derivedStatus) (*compiledRule, []string) {
	if st.code == 0 || st.fromWords() {
		return nil, conflicts
	}
	var status *compiledRule
	for _, r := range all {
		if r.httpSet != nil && r.Tier == TierStatus {
			status = r
			break
		}
	}
	if status == nil {
		return nil, conflicts
	}
	var pick *compiledRule
	for _, id := range conflicts {
		r := ruleByID(all, id)
		if r == nil || !r.General {
			return nil, conflicts
		}
		if pick == nil && ClassOf(r.Code) == ClassOf(status.Code) {
			pick = r
		}
	}
	if pick == nil {
		return nil, conflicts
	}
	return pick, nil
}

// ruleByID returns the rule of rs with the given id.
func ruleByID(rs []*compiledRule, id string) *compiledRule {
	for _, r := range rs {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// outranked reports whether another rule of rs declares it outranks r.
func outranked(r *compiledRule, rs []*compiledRule) bool {
	for _, o := range rs {
		if o != r && o.beats[r.ID] {
			return true
		}
	}
	return false
}

// excerpt picks the text that made r match: the suffix of a prefix match,
// the line around a regex match, else the evidence's most specific text —
// unless that is a message without what a typed-body or status rule
// matched (r.needle), when the line of the data that holds it is.
func (r *compiledRule) excerpt(vw *view) string {
	if r.prefix != nil {
		return prefixSuffix(vw.text(FieldMessage), r.prefix.Prefix)
	}
	if r.re != nil {
		for _, f := range r.in {
			t := vw.text(f)
			if loc := r.re.FindStringIndex(t); loc != nil {
				return around(t, loc[0])
			}
		}
	}
	t := excerptText(vw)
	if t != headBytes(vw.text(FieldMessage), 4096) {
		return t
	}
	needle := r.needle(vw)
	if needle == "" || strings.Contains(strings.ToLower(t), needle) {
		return t
	}
	// The message does not hold what matched (a typed body or a status
	// inside the data of "Internal error: Agent error"): the line of the
	// data that does is the excerpt.
	dt, dl := vw.text(FieldData), vw.lower(FieldData)
	if i := strings.Index(dl, needle); i >= 0 && len(dl) == len(dt) {
		return lineAt(dt, i)
	}
	return t
}

// needle is what a rule without a regex matched, as text to find in the
// evidence (lower case): the most specific value of its field matches (a
// provider's error type), else the HTTP status it read; "" when neither.
func (r *compiledRule) needle(vw *view) string {
	best := ""
	for _, f := range r.fields {
		for v := range f.values {
			if len(v) > len(best) || (len(v) == len(best) && v < best) {
				best = v
			}
		}
	}
	if len(best) >= 4 {
		return strings.ToLower(best)
	}
	if r.httpSet != nil {
		if code := vw.status().code; code != 0 {
			return strconv.Itoa(code)
		}
	}
	return ""
}

// lineAt returns the line of t holding byte i (a leaf of the data).
func lineAt(t string, i int) string {
	start := strings.LastIndexByte(t[:i], '\n') + 1
	end := strings.IndexByte(t[i:], '\n')
	if end < 0 {
		return headBytes(t[start:], 4096)
	}
	return headBytes(t[start:i+end], 4096)
}

// around returns the text from the start of the line holding byte i (at
// most 512 bytes back) to at most 4 KiB further.
func around(t string, i int) string {
	start := strings.LastIndexByte(t[:i], '\n') + 1
	if i-start > 512 {
		start = i - 512
	}
	return headBytes(t[start:], 4096)
}

// genericRPCMessage matches JSON-RPC messages that say nothing by themselves.
func genericRPCMessage(m string) bool {
	switch strings.ToLower(strings.TrimSpace(m)) {
	case "", "internal error", "server error", "invalid params", "invalid request", "unknown error":
		return true
	}
	return false
}

// dataMessage returns the human-readable message of structured error data
// ({"message":…} or {"error":{"message":…}}), or "".
func dataMessage(data []byte) string {
	if len(data) == 0 || len(data) > MaxScanBytes {
		return ""
	}
	val, ok := decodeJSON(data)
	if !ok {
		return ""
	}
	obj, _ := val.(map[string]any)
	if m, ok := obj["message"].(string); ok {
		return m
	}
	if e, ok := obj["error"].(map[string]any); ok {
		if m, ok := e["message"].(string); ok {
			return m
		}
	}
	return ""
}

// excerptText picks the most specific text of the evidence for the excerpt.
func excerptText(vw *view) string {
	fields := []string{FieldMessage, FieldData, FieldStderr}
	if genericRPCMessage(vw.text(FieldMessage)) {
		fields = []string{FieldData, FieldMessage, FieldStderr}
	}
	for _, f := range fields {
		t := vw.text(f)
		if f == FieldData {
			if m := dataMessage(vw.ev.Data); m != "" {
				t = m
			}
		}
		if strings.TrimSpace(t) == "" {
			continue
		}
		if f == FieldStderr {
			// The last non-empty line is the one that says what happened.
			lines := strings.Split(strings.TrimRight(t, "\n"), "\n")
			for i := len(lines) - 1; i >= 0; i-- {
				if strings.TrimSpace(lines[i]) != "" {
					return lines[i]
				}
			}
		}
		return headBytes(t, 4096)
	}
	ev := vw.ev
	switch {
	case ev.Signal != "":
		return "agent killed by signal " + ev.Signal
	case ev.ExitCode != nil:
		return fmt.Sprintf("agent exited with code %d", *ev.ExitCode)
	}
	return ""
}

// matches reports whether every condition of r holds for the evidence and
// no veto fires.
func (r *compiledRule) matches(vw *view) bool {
	ev := vw.ev
	if r.Adapter != AnyAdapter && r.Adapter != vw.adapter {
		return false
	}
	if !r.sources[ev.Source] {
		return false
	}
	if r.Match.RPCCode != nil && (ev.RPCCode == nil || *ev.RPCCode != *r.Match.RPCCode) {
		return false
	}
	if r.httpSet != nil && !r.httpSet[vw.status().code] {
		return false
	}
	if r.httpSet != nil && vw.status().fromWords() && vw.mentionOnly() {
		return false // "when the server returns 503 …" (mention.go)
	}
	if r.prefix != nil && !prefixMatches(vw.text(FieldMessage), r.prefix) {
		return false
	}
	if r.re != nil {
		if lits := r.prefilter(); lits != nil && !r.anyLower(vw, lits) {
			return false
		}
		if !r.anyText(vw, r.re.MatchString) {
			return false
		}
		if r.wordsOnly() && (vw.mentionOnly() || r.quotedMention(vw)) {
			return false // prose that names the failure (mention.go)
		}
		if r.textOnly() && vw.proseDiscourse() {
			return false // code talk that names an error class (mention.go)
		}
	}
	if len(r.fields) > 0 && !r.fieldsMatch(vw) {
		return false
	}
	for _, veto := range r.vetoes {
		if r.anyText(vw, veto.MatchString) {
			return false
		}
	}
	return true
}

// quotedMention reports whether, in prose that is not error-shaped, every
// text r matches holds its match only in quotes amid other words
// (mentionQuote).
func (r *compiledRule) quotedMention(vw *view) bool {
	if !vw.prose() || vw.errorShaped() {
		return false
	}
	seen := false
	for _, f := range r.in {
		t := vw.text(f)
		if t == "" || !r.re.MatchString(t) {
			continue
		}
		if !quotedOnly(t, r.re.get()) {
			return false
		}
		seen = true
	}
	return seen
}

func (r *compiledRule) anyLower(vw *view, lits []string) bool {
	for _, f := range r.in {
		t := vw.lower(f)
		for _, l := range lits {
			if strings.Contains(t, l) {
				return true
			}
		}
	}
	return false
}

func (r *compiledRule) anyText(vw *view, match func(string) bool) bool {
	for _, f := range r.in {
		if t := vw.text(f); t != "" && match(t) {
			return true
		}
	}
	return false
}

// fieldsMatch reports whether one JSON object satisfies every field match.
func (r *compiledRule) fieldsMatch(vw *view) bool {
	var buf []any
	for _, obj := range vw.objectNodes() {
		ok := true
		for _, f := range r.fields {
			buf = buf[:0]
			for _, p := range f.paths {
				buf = lookup(obj, p, buf)
			}
			if !f.holds(buf) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (f *compiledField) holds(vals []any) bool {
	if len(vals) == 0 {
		return false
	}
	if f.values == nil && f.re == nil {
		return true
	}
	for _, v := range vals {
		s, ok := scalarText(v)
		if !ok {
			continue
		}
		if f.values != nil && !f.values[s] {
			continue
		}
		if f.re != nil && !f.re.MatchString(headBytes(s, MaxScanBytes)) {
			continue
		}
		return true
	}
	return false
}

// prefixMatches implements the control-chunk test: after Unicode trimming
// the text starts case-insensitively with the prefix and the rest, trimmed,
// is non-empty and at most MaxSuffixBytes long.
func prefixMatches(text string, p *PrefixMatch) bool {
	t := strings.TrimFunc(text, unicode.IsSpace)
	if len(t) < len(p.Prefix) || !strings.EqualFold(t[:len(p.Prefix)], p.Prefix) {
		return false
	}
	suffix := strings.TrimFunc(t[len(p.Prefix):], unicode.IsSpace)
	return suffix != "" && len(suffix) <= p.MaxSuffixBytes
}

// prefixSuffix returns the trimmed text after the prefix.
func prefixSuffix(text, prefix string) string {
	t := strings.TrimFunc(text, unicode.IsSpace)
	if len(t) < len(prefix) {
		return t
	}
	return strings.TrimFunc(t[len(prefix):], unicode.IsSpace)
}

// ErrUnknownRule is returned when an ID names no rule.
var ErrUnknownRule = errors.New("unknown rule")
