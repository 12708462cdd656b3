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
// Without check, its id and patterns are not checked (compileWith).
func compileRule(r Rule, index int, check bool) (*compiledRule, []string) {
	var errs []string
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Sprintf("rule %q: ", r.ID)+fmt.Sprintf(format, args...))
	}
	cr := &compiledRule{Rule: r, index: index, sources: map[Source]bool{}}
	if check && !ruleIDRe().MatchString(r.ID) {
		bad("id must look like vendor.signature.vN")
	}
	if r.Tier < TierStructured || r.Tier > TierStatus {
		bad("tier %d: want 1, 2, 3 or 4", r.Tier)
	}
	for _, st := range r.OverridesStatus {
		if !validStatus(st) {
			bad("overridesStatus: %d is not an HTTP error status (400–599)", st)
		}
	}
	if !knownAdapter(r.Adapter) {
		bad("adapter %q: want %q or one of %v", r.Adapter, AnyAdapter, Adapters)
	}
	if len(r.Sources) == 0 {
		bad("sources: at least one source is required")
	}
	for _, s := range r.Sources {
		if !knownSource(s) {
			bad("sources: unknown source %q", s)
		}
		cr.sources[s] = true
	}
	if !KnownCode(r.Code) || r.Code == CodeUnclassified {
		bad("code %q has no class (not in the code registry)", r.Code)
	}
	if r.Confidence != "high" && r.Confidence != "medium" {
		bad("confidence %q: want high or medium (low confidence is unclassified)", r.Confidence)
	}
	switch r.Scope {
	case "provider", "account", "model", "request", "agent", "network":
	default:
		bad("scope %q: want provider, account, model, request, agent or network", r.Scope)
	}
	for _, t := range r.Timing {
		if !timingNames[t] {
			bad("timing: unknown extractor %q", t)
		}
	}
	m := r.Match
	cr.in = m.In
	if len(cr.in) == 0 {
		cr.in = []string{FieldMessage, FieldData, FieldStderr}
	}
	for _, f := range cr.in {
		if f != FieldMessage && f != FieldData && f != FieldStderr {
			bad("match.in: unknown field %q", f)
		}
	}
	if m.RPCCode == nil && len(m.HTTPStatus) == 0 && len(m.Fields) == 0 && m.Prefix == nil && m.Regex == "" {
		bad("match: no condition")
	}
	if len(m.HTTPStatus) > 0 {
		cr.httpSet = map[int]bool{}
		for _, s := range m.HTTPStatus {
			cr.httpSet[s] = true
		}
	}
	if m.Literal != "" {
		if m.Regex == "" {
			bad("match.literal without match.regex")
		}
	}
	if m.Regex != "" {
		re, err := newPattern(m.Regex, check)
		if err != nil {
			bad("match.regex: %v", err)
		} else {
			cr.re = re
		}
	}
	if m.Literal != "" {
		cr.literal = []string{strings.ToLower(m.Literal)}
	}
	for i, f := range m.Fields {
		if f.Path == "" {
			bad("match.fields[%d]: empty path", i)
			continue
		}
		cf := compiledField{}
		for _, alt := range strings.Split(f.Path, "|") {
			if alt == "" {
				bad("match.fields[%d]: empty path alternative", i)
			}
			cf.paths = append(cf.paths, strings.Split(alt, "."))
		}
		if len(f.Values) > 0 {
			cf.values = map[string]bool{}
			for _, v := range f.Values {
				cf.values[v] = true
			}
		}
		if f.Regex != "" {
			re, err := newPattern(f.Regex, check)
			if err != nil {
				bad("match.fields[%d].regex: %v", i, err)
			}
			cf.re = re
		}
		cr.fields = append(cr.fields, cf)
	}
	if p := m.Prefix; p != nil {
		if strings.TrimFunc(p.Prefix, unicode.IsSpace) == "" {
			bad("match.prefix.prefix: empty")
		}
		if p.MaxSuffixBytes <= 0 {
			bad("match.prefix.maxSuffixBytes: want > 0")
		}
		cr.prefix = p
	}
	for _, st := range r.OverridesStatus {
		if cr.changes == nil {
			cr.changes = map[int]bool{}
		}
		cr.changes[st] = true
	}
	for i, id := range r.Outranks {
		if id == r.ID {
			bad("outranks[%d]: a rule cannot outrank itself", i)
		}
		if cr.beats == nil {
			cr.beats = map[string]bool{}
		}
		cr.beats[id] = true
	}
	for i, v := range r.Veto {
		re, err := newPattern(v, check)
		if err != nil {
			bad("veto[%d]: %v", i, err)
			continue
		}
		cr.vetoes = append(cr.vetoes, re)
	}
	return cr, errs
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
