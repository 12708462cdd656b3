package classify

import (
	"encoding/json"
	"fmt"
	"regexp/syntax"
	"strings"
	"time"
	"unicode"
)

// Tiers order rules from the most specific evidence to the most general
// (see Engine.Classify): a provider's typed error code or name, an exact
// signature (an adapter's or a provider's own sentence), a phrase of the
// provider-agnostic intent table, and last the HTTP status alone.
const (
	TierStructured = 1 // typed fields and names: error.type, error.code, ErrorInfo.reason, exception names, transport error codes
	TierSignature  = 2 // exact signatures: adapter-scoped projections, one provider's or agent's own sentence
	TierPhrase     = 3 // the intent table: how every provider words a kind of failure; ordered, first match wins
	TierStatus     = 4 // the HTTP status (derived from wherever the evidence carries it) and names that stand for one; ordered
)

// ordered reports whether a tier decides by catalogue order (first match
// wins) rather than by agreement (rules of the tier that disagree on the
// class make the evidence conflicting).
func ordered(tier int) bool { return tier >= TierPhrase }

// Text fields a rule's regex, literal and vetoes look at.
const (
	FieldMessage = "message" // Evidence.Message
	FieldData    = "data"    // string leaves of Evidence.Data (or its raw text)
	FieldStderr  = "stderr"  // Evidence.Stderr, newline-joined
)

// Timing extractor names (see timing.go).
const (
	TimingHeaders     = "headers"      // Retry-After, retry-after-ms, x-ratelimit-reset*, anthropic-ratelimit-*-reset
	TimingJSON        = "json"         // retryDelay, resets_at, resets_in_seconds, reset_at, ... in structured data
	TimingText        = "text"         // "try again in 20s", "retry in 3.5s", "try again at 5:40 PM", "resets 3pm (Zone)", RFC 3339
	TimingClaudeEpoch = "claude_epoch" // "Claude AI usage limit reached|<epoch seconds>"
)

var timingNames = map[string]bool{TimingHeaders: true, TimingJSON: true, TimingText: true, TimingClaudeEpoch: true}

// Rule is one catalogue entry. All of a rule's matchers must hold for it to
// match, and none of its vetoes may match. Rules are data: they are decoded
// from the catalogue file and compiled by Compile.
type Rule struct {
	ID         string   `json:"id"`               // vendor.signature.vN, stable forever
	Tier       int      `json:"tier"`             // 1 structured, 2 exact signature, 3 broad pattern
	Adapter    string   `json:"adapter"`          // "any" or one of Adapters
	Sources    []Source `json:"sources"`          // evidence sources the rule applies to
	Match      Match    `json:"match"`            // conditions, all must hold
	Veto       []string `json:"veto,omitempty"`   // RE2 patterns over Match.In text; any hit vetoes
	Code       string   `json:"code"`             // semantic code; the class follows from it
	Confidence string   `json:"confidence"`       // high | medium
	Scope      string   `json:"scope"`            // provider | account | model | request | agent | network
	Timing     []string `json:"timing,omitempty"` // timing extractors, in priority order
	Note       string   `json:"note,omitempty"`   // why the rule exists, where its text comes from
	// Outranks lists rules of the same rank (see Engine.Classify) this rule
	// is more specific than: when both match, this one wins. Each entry
	// needs a positive collision fixture (one both rules match).
	Outranks []string `json:"outranks,omitempty"`
	// General marks a rule that states only a broad kind of failure, as a
	// status does: a request rejected, a limit hit, a server failing, a
	// typed code that restates one status (anthropic's rate_limit_error
	// is any 429). Any other matched rule below the status tier that is
	// not general refines it, whatever its tier and class; see decide.
	General bool `json:"general,omitempty"`
	// OverridesStatus lists the HTTP statuses whose class this rule may
	// change (a 429 whose body says the daily quota is gone is hard, not
	// transient; a 429 "Request too large" is a request to change). Without
	// it, a rule whose class differs from the evidence's status makes the
	// evidence conflicting. Each entry needs a positive collision fixture
	// with that status.
	OverridesStatus []int `json:"overridesStatus,omitempty"`
}

// Match holds a rule's conditions. Empty fields are not checked; a rule
// must set at least one condition.
type Match struct {
	RPCCode    *int         `json:"rpcCode,omitempty"`    // JSON-RPC error code equals
	HTTPStatus []int        `json:"httpStatus,omitempty"` // the evidence's HTTP status (status.go: envelope, JSON-RPC code, fields, text, names) is one of
	Fields     []FieldMatch `json:"fields,omitempty"`     // all hold within one JSON object of the data
	Prefix     *PrefixMatch `json:"prefix,omitempty"`     // control-chunk style prefix on the message
	Literal    string       `json:"literal,omitempty"`    // case-insensitive substring prefilter for Regex
	Regex      string       `json:"regex,omitempty"`      // RE2 over the In text
	In         []string     `json:"in,omitempty"`         // text fields for Literal/Regex/Veto; default all
}

// FieldMatch tests one value in structured data. Path is dot-separated keys
// ("error.type"; alternatives separated by "|": "codex_error_info|codexErrorInfo")
// relative to a JSON object found anywhere in Evidence.Data or in a JSON
// object embedded in the message, data strings or stderr; arrays on the
// path are traversed element by element. With Values, the value (string,
// or number/bool as JSON text) must equal one of them; with Regex it must
// match it; with neither, the path must merely exist.
type FieldMatch struct {
	Path   string   `json:"path"`
	Values []string `json:"values,omitempty"`
	Regex  string   `json:"regex,omitempty"`
}

// PrefixMatch matches a message that, after Unicode whitespace trimming,
// starts case-insensitively with Prefix and continues with a suffix that is
// non-empty and at most MaxSuffixBytes long after Unicode trimming.
type PrefixMatch struct {
	Prefix         string `json:"prefix"`
	MaxSuffixBytes int    `json:"maxSuffixBytes"`
}

// Catalogue is a versioned rule set with its fixtures.
type Catalogue struct {
	Version  string    `json:"version"`
	Rules    []Rule    `json:"rules"`
	Fixtures []Fixture `json:"fixtures,omitempty"`
}

// Fixture is one test vector. A positive fixture (Match true) must be won
// by Rule, with no other rule of the same tier matching it; a negative one
// must not be won by Rule, and when Code is set the verdict's code must
// equal it (e.g. "unclassified" for agent prose). Want* are optional
// expectations on timing hints.
type Fixture struct {
	Name         string          `json:"name"`
	Rule         string          `json:"rule"`
	Match        bool            `json:"match"`
	Code         string          `json:"code,omitempty"`
	Now          string          `json:"now,omitempty"` // RFC 3339; default 2026-11-29T12:00:00Z
	Evidence     json.RawMessage `json:"evidence"`
	RetryAfterMs *int64          `json:"retryAfterMs,omitempty"`
	ResetAt      string          `json:"resetAt,omitempty"`
	Transcript   string          `json:"transcript,omitempty"` // where the text was captured
}

// DefaultFixtureNow is the pinned clock of fixtures that do not set Now.
var DefaultFixtureNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// compiledRule is a Rule ready to run.
type compiledRule struct {
	Rule
	index   int
	sources map[Source]bool
	in      []string
	literal []string // Match.Literal lower-cased; nil: re's own literals (prefilter)
	re      *pattern
	vetoes  []*pattern
	fields  []compiledField
	prefix  *PrefixMatch
	httpSet map[int]bool
	beats   map[string]bool // Outranks as a set
	changes map[int]bool    // OverridesStatus as a set
}

// rank orders rules by precedence: typed structure (tier 1) outranks
// signatures (tier 2), which outrank phrases (tier 3), which outrank the
// status (tier 4); within a tier a rule scoped to one adapter outranks a
// rule for any adapter. Lower is stronger.
func (r *compiledRule) rank() int {
	n := r.Tier * 2
	if r.Adapter == AnyAdapter {
		n++
	}
	return n
}

type compiledField struct {
	paths  [][]string // alternatives
	values map[string]bool
	re     *pattern
}

var ruleIDRe = lazyRegexp(`^[a-z0-9_]+(?:\.[a-z0-9_]+)+\.v[0-9]+$`)

// compileRule validates r and prepares it; errors name the rule and field.
// Without check, its id and patterns are not checked (compileWith). Each
// part of the rule has its own step (ruleSteps), run in the order the
// errors are reported.
func compileRule(r Rule, index int, check bool) (*compiledRule, []string) {
	c := &ruleCompiler{
		r:     r,
		cr:    &compiledRule{Rule: r, index: index, sources: map[Source]bool{}},
		check: check,
	}
	for _, step := range ruleSteps {
		step(c)
	}
	return c.cr, c.errs
}

// ruleCompiler is one rule being compiled: what compileRule's steps read
// (r, check), build (cr) and find wrong (errs).
type ruleCompiler struct {
	r     Rule
	cr    *compiledRule
	check bool
	errs  []string
}

// ruleSteps are the steps of compileRule, one per part of a rule, in the
// order of the errors they report.
var ruleSteps = [...]func(*ruleCompiler){
	(*ruleCompiler).id,
	(*ruleCompiler).tier,
	(*ruleCompiler).overridesStatus,
	(*ruleCompiler).adapter,
	(*ruleCompiler).sources,
	(*ruleCompiler).code,
	(*ruleCompiler).confidence,
	(*ruleCompiler).scope,
	(*ruleCompiler).timing,
	(*ruleCompiler).in,
	(*ruleCompiler).anyCondition,
	(*ruleCompiler).httpStatus,
	(*ruleCompiler).text,
	(*ruleCompiler).fields,
	(*ruleCompiler).prefix,
	(*ruleCompiler).outranks,
	(*ruleCompiler).vetoes,
}

// bad records a problem of the rule, prefixed with its id.
func (c *ruleCompiler) bad(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf("rule %q: ", c.r.ID)+fmt.Sprintf(format, args...))
}

func (c *ruleCompiler) id() {
	if c.check && !ruleIDRe().MatchString(c.r.ID) {
		c.bad("id must look like vendor.signature.vN")
	}
}

func (c *ruleCompiler) tier() {
	if c.r.Tier < TierStructured || c.r.Tier > TierStatus {
		c.bad("tier %d: want 1, 2, 3 or 4", c.r.Tier)
	}
}

func (c *ruleCompiler) overridesStatus() {
	for _, st := range c.r.OverridesStatus {
		if !validStatus(st) {
			c.bad("overridesStatus: %d is not an HTTP error status (400–599)", st)
		}
	}
	c.cr.changes = setOf(c.r.OverridesStatus)
}

func (c *ruleCompiler) adapter() {
	if !knownAdapter(c.r.Adapter) {
		c.bad("adapter %q: want %q or one of %v", c.r.Adapter, AnyAdapter, Adapters)
	}
}

func (c *ruleCompiler) sources() {
	if len(c.r.Sources) == 0 {
		c.bad("sources: at least one source is required")
	}
	for _, s := range c.r.Sources {
		if !knownSource(s) {
			c.bad("sources: unknown source %q", s)
		}
		c.cr.sources[s] = true
	}
}

func (c *ruleCompiler) code() {
	if !KnownCode(c.r.Code) || c.r.Code == CodeUnclassified {
		c.bad("code %q has no class (not in the code registry)", c.r.Code)
	}
}

func (c *ruleCompiler) confidence() {
	if c.r.Confidence != "high" && c.r.Confidence != "medium" {
		c.bad("confidence %q: want high or medium (low confidence is unclassified)", c.r.Confidence)
	}
}

func (c *ruleCompiler) scope() {
	switch c.r.Scope {
	case "provider", "account", "model", "request", "agent", "network":
	default:
		c.bad("scope %q: want provider, account, model, request, agent or network", c.r.Scope)
	}
}

func (c *ruleCompiler) timing() {
	for _, t := range c.r.Timing {
		if !timingNames[t] {
			c.bad("timing: unknown extractor %q", t)
		}
	}
}

// in: the text fields the literal, regex and vetoes look at; all of them
// when the rule names none.
func (c *ruleCompiler) in() {
	c.cr.in = c.r.Match.In
	if len(c.cr.in) == 0 {
		c.cr.in = []string{FieldMessage, FieldData, FieldStderr}
	}
	for _, f := range c.cr.in {
		if f != FieldMessage && f != FieldData && f != FieldStderr {
			c.bad("match.in: unknown field %q", f)
		}
	}
}

// anyCondition: a rule matches on something (a literal alone is only a
// prefilter, and vetoes only take matches away).
func (c *ruleCompiler) anyCondition() {
	if m := c.r.Match; m.RPCCode == nil && len(m.HTTPStatus) == 0 && len(m.Fields) == 0 && m.Prefix == nil && m.Regex == "" {
		c.bad("match: no condition")
	}
}

func (c *ruleCompiler) httpStatus() {
	c.cr.httpSet = setOf(c.r.Match.HTTPStatus)
}

// text: the regex over the In text, and the literal that prefilters it.
func (c *ruleCompiler) text() {
	m := c.r.Match
	if m.Literal != "" && m.Regex == "" {
		c.bad("match.literal without match.regex")
	}
	if m.Regex != "" {
		re, err := newPattern(m.Regex, c.check)
		if err != nil {
			c.bad("match.regex: %v", err)
		} else {
			c.cr.re = re
		}
	}
	if m.Literal != "" {
		c.cr.literal = []string{strings.ToLower(m.Literal)}
	}
}

func (c *ruleCompiler) fields() {
	for i, f := range c.r.Match.Fields {
		if f.Path == "" {
			c.bad("match.fields[%d]: empty path", i)
			continue
		}
		c.cr.fields = append(c.cr.fields, c.field(i, f))
	}
}

// field compiles match.fields[i], whose path is not empty.
func (c *ruleCompiler) field(i int, f FieldMatch) compiledField {
	cf := compiledField{values: setOf(f.Values)}
	for _, alt := range strings.Split(f.Path, "|") {
		if alt == "" {
			c.bad("match.fields[%d]: empty path alternative", i)
		}
		cf.paths = append(cf.paths, strings.Split(alt, "."))
	}
	if f.Regex != "" {
		re, err := newPattern(f.Regex, c.check)
		if err != nil {
			c.bad("match.fields[%d].regex: %v", i, err)
		}
		cf.re = re
	}
	return cf
}

func (c *ruleCompiler) prefix() {
	p := c.r.Match.Prefix
	if p == nil {
		return
	}
	if strings.TrimFunc(p.Prefix, unicode.IsSpace) == "" {
		c.bad("match.prefix.prefix: empty")
	}
	if p.MaxSuffixBytes <= 0 {
		c.bad("match.prefix.maxSuffixBytes: want > 0")
	}
	c.cr.prefix = p
}

func (c *ruleCompiler) outranks() {
	for i, id := range c.r.Outranks {
		if id == c.r.ID {
			c.bad("outranks[%d]: a rule cannot outrank itself", i)
		}
	}
	c.cr.beats = setOf(c.r.Outranks)
}

func (c *ruleCompiler) vetoes() {
	for i, v := range c.r.Veto {
		re, err := newPattern(v, c.check)
		if err != nil {
			c.bad("veto[%d]: %v", i, err)
			continue
		}
		c.cr.vetoes = append(c.cr.vetoes, re)
	}
}

// setOf returns the members of list as a set; nil when list is empty.
func setOf[T comparable](list []T) map[T]bool {
	if len(list) == 0 {
		return nil
	}
	set := make(map[T]bool, len(list))
	for _, v := range list {
		set[v] = true
	}
	return set
}

// prefilter returns the literals of which the text must contain one
// before the rule's regex runs (nil: no prefilter).
func (r *compiledRule) prefilter() []string {
	if r.literal != nil {
		return r.literal
	}
	return r.re.literals()
}

// prefilterLiterals derives, from an RE2 pattern, lower-cased literals of
// which every match contains at least one: for an alternation one literal
// per branch, for a concatenation the best of its parts. nil means no
// useful prefilter. Text is lower-cased before the test, so literals of
// case-insensitive parts are safe too (exotic folds such as U+017F ſ → s
// aside, which acp-guard's signatures do not rely on).
func prefilterLiterals(pattern string) []string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	lits := requiredLiterals(re.Simplify())
	for _, l := range lits {
		if len(l) < 3 {
			return nil
		}
	}
	return lits
}

func requiredLiterals(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{strings.ToLower(string(re.Rune))}
	case syntax.OpCapture:
		return requiredLiterals(re.Sub[0])
	case syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			l := requiredLiterals(sub)
			if l == nil {
				return nil
			}
			out = append(out, l...)
		}
		return out
	case syntax.OpConcat:
		var best []string
		for _, sub := range re.Sub {
			l := requiredLiterals(sub)
			if l != nil && (best == nil || shortest(l) > shortest(best)) {
				best = l
			}
		}
		return best
	}
	return nil
}

func shortest(lits []string) int {
	n := -1
	for _, l := range lits {
		if n < 0 || len(l) < n {
			n = len(l)
		}
	}
	return n
}
