package policy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/acp-guard/acp-guard/classify"
)

// Limits of the version 1 document (the package doc specifies it).
const (
	// Version is the only supported document version.
	Version = 1
	// MaxRetriesLimit is the largest retry budget of an enabled retry section.
	MaxRetriesLimit = 10
	// MaxInitialIntervalSeconds is the largest first retry delay.
	MaxInitialIntervalSeconds = 3600
	// MaxWaitSecondsLimit is the largest reset wait (7 days).
	MaxWaitSecondsLimit = 604800
)

// Legacy rule names accepted by [FromLegacy] and [Parse].
const (
	LegacyRetrySame = "retry_same"
	LegacyTryNext   = "try_next"
	LegacyStop      = "stop"
)

// LegacyRetrySameSeconds is the delay of the single retry retry_same maps to.
const LegacyRetrySameSeconds = 5

const (
	classTransient    = "transient"
	classHard         = "hard"
	classRequest      = "request"
	classUnclassified = "unclassified"
)

// FieldError is one problem in a policy document, addressed by a dotted
// field path such as "transient.retry.max_retries" or "fallback_models[2]".
// Field is empty when the problem concerns the document as a whole.
type FieldError struct {
	Field string
	Msg   string
}

func (e FieldError) Error() string {
	if e.Field == "" {
		return "(document): " + e.Msg
	}
	return e.Field + ": " + e.Msg
}

// ValidationError lists every problem found in a document, in field order.
type ValidationError struct {
	Errors []FieldError
}

// Error returns the problems one per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual field errors, for errors.As.
func (e *ValidationError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		errs[i] = fe
	}
	return errs
}

// Default is the policy of a document that was not configured: immediate
// skip for both classes, with retry and reset waiting disabled.
func Default() Document {
	cp := ClassPolicy{OnExhausted: OutcomeSkip}
	return Document{Version: Version, Transient: cp, Hard: cp}
}

// FromLegacy normalizes a legacy rule name into a version 1 document:
// try_next → no wait, no retry, then skip (both classes); stop → no wait,
// no retry, then stop; retry_same → one retry after 5 s, then stop.
func FromLegacy(name string) (Document, error) {
	var cp ClassPolicy
	switch name {
	case LegacyTryNext:
		cp = ClassPolicy{OnExhausted: OutcomeSkip}
	case LegacyStop:
		cp = ClassPolicy{OnExhausted: OutcomeStop}
	case LegacyRetrySame:
		cp = ClassPolicy{
			Retry:       Retry{Enabled: true, MaxRetries: 1, InitialIntervalSeconds: LegacyRetrySameSeconds},
			OnExhausted: OutcomeStop,
		}
	default:
		return Document{}, &ValidationError{Errors: []FieldError{{
			Field: "legacy",
			Msg:   fmt.Sprintf("must be %q, %q or %q (got %q)", LegacyRetrySame, LegacyTryNext, LegacyStop, name),
		}}}
	}
	return Document{Version: Version, Transient: cp, Hard: cp}, nil
}

// Normalized returns the document as indented JSON ending in a newline, in
// the canonical version 1 shape: every section present, disabled sections
// as zeros.
func (d Document) Normalized() []byte {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		// Document holds only ints, bools and strings.
		panic("policy: marshal document: " + err.Error())
	}
	return append(b, '\n')
}

// Validate checks the limits of an already decoded document. It returns nil
// or a *ValidationError.
func (d Document) Validate() error {
	var errs []FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if d.Version != Version {
		add("version", "unsupported version %d (want %d)", d.Version, Version)
	}
	validateClass(classTransient, d.Transient, add)
	validateClass(classHard, d.Hard, add)
	validateCodes(d.Codes, add)
	if d.EmptyTurn != "" && d.EmptyTurn != EmptyTurnPass && d.EmptyTurn != EmptyTurnError {
		add("empty_turn", "must be %q or %q (got %q)", EmptyTurnPass, EmptyTurnError, d.EmptyTurn)
	}
	if d.StallTimeoutSeconds < 0 || d.StallTimeoutSeconds > MaxStallTimeoutSeconds {
		add("stall_timeout_seconds", "must be 0 (off) to %d (got %d)", MaxStallTimeoutSeconds, d.StallTimeoutSeconds)
	}
	if h := d.HonourHintUpToSeconds; h != nil && (*h < 0 || *h > MaxHonourHintUpToSeconds) {
		add("honour_hint_up_to_seconds", "must be 0 (off) to %d (got %d)", MaxHonourHintUpToSeconds, *h)
	}
	seen := map[string]int{}
	for i, m := range d.FallbackModels {
		f := fmt.Sprintf("fallback_models[%d]", i)
		switch {
		case strings.TrimSpace(m) == "":
			add(f, "must not be empty")
		case strings.IndexFunc(m, unicode.IsControl) >= 0:
			add(f, "must not contain control characters")
		default:
			if j, dup := seen[m]; dup {
				add(f, "duplicate of fallback_models[%d] (%q)", j, m)
			} else {
				seen[m] = i
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &ValidationError{Errors: errs}
}

// validateClass checks the limits of one class policy (or per-code
// override) whose fields are addressed under p ("transient",
// "codes.quota_limited").
func validateClass(p string, cp ClassPolicy, add func(field, format string, args ...any)) {
	r, w := cp.Retry, cp.WaitForReset
	if r.Enabled {
		if r.MaxRetries < 1 || r.MaxRetries > MaxRetriesLimit {
			add(p+".retry.max_retries", "must be 1–%d when retry is enabled (got %d)", MaxRetriesLimit, r.MaxRetries)
		}
		if r.InitialIntervalSeconds < 1 || r.InitialIntervalSeconds > MaxInitialIntervalSeconds {
			add(p+".retry.initial_interval_seconds", "must be 1–%d when retry is enabled (got %d)", MaxInitialIntervalSeconds, r.InitialIntervalSeconds)
		}
	} else {
		if r.MaxRetries != 0 {
			add(p+".retry.max_retries", "must be 0 when retry is disabled (got %d)", r.MaxRetries)
		}
		if r.InitialIntervalSeconds != 0 {
			add(p+".retry.initial_interval_seconds", "must be 0 when retry is disabled (got %d)", r.InitialIntervalSeconds)
		}
	}
	if w.Enabled {
		if w.MaxWaitSeconds < 1 || w.MaxWaitSeconds > MaxWaitSecondsLimit {
			add(p+".wait_for_reset.max_wait_seconds", "must be 1–%d when wait_for_reset is enabled (got %d)", MaxWaitSecondsLimit, w.MaxWaitSeconds)
		}
	} else if w.MaxWaitSeconds != 0 {
		add(p+".wait_for_reset.max_wait_seconds", "must be 0 when wait_for_reset is disabled (got %d)", w.MaxWaitSeconds)
	}
	if cp.OnExhausted != OutcomeSkip && cp.OnExhausted != OutcomeStop {
		add(p+".on_exhausted", "must be %q or %q (got %q)", OutcomeSkip, OutcomeStop, cp.OnExhausted)
	}
}

// validateCodes checks the per-code overrides: each names a known code of
// a configurable class, and no override retries or waits for an auth or
// credential failure.
func validateCodes(codes map[string]ClassPolicy, add func(field, format string, args ...any)) {
	for _, code := range slices.Sorted(maps.Keys(codes)) {
		f := "codes." + code
		switch class := classify.ClassOf(code); {
		case !classify.KnownCode(code):
			add(f, "unknown code (want one of %s)", strings.Join(configurableCodes(), ", "))
			continue
		case class != classify.ClassTransient && class != classify.ClassHard:
			add(f, "code of class %s: only transient and hard codes are configurable", class)
			continue
		}
		cp := codes[code]
		validateClass(f, cp, add)
		if NeverRetried(code) {
			if cp.Retry.Enabled {
				add(f+".retry.enabled", "must be false: auth and credential failures are never retried")
			}
			if cp.WaitForReset.Enabled {
				add(f+".wait_for_reset.enabled", "must be false: auth and credential failures are never waited for")
			}
		}
	}
}

// configurableCodes lists the codes a per-code override may name.
func configurableCodes() []string {
	var out []string
	for _, c := range classify.Codes() {
		if k := classify.ClassOf(c); k == classify.ClassTransient || k == classify.ClassHard {
			out = append(out, c)
		}
	}
	return out
}

// Parse decodes and validates a policy document. The input is either
//
//   - a version 1 object (see the package documentation),
//   - a legacy rule as a JSON string: "retry_same", "try_next" or "stop", or
//   - a legacy object {"version":1,"legacy":"retry_same"}, optionally with
//     "fallback_models".
//
// Legacy forms are normalized with [FromLegacy]. Omitted parts take the
// defaults: version 1; a missing class, retry or wait_for_reset is
// disabled; a missing on_exhausted is skip; a section without "enabled" is
// enabled when it sets a field. Unknown fields, unknown classes and
// out-of-range values are refused; every problem is reported in one
// *ValidationError.
func Parse(data []byte) (Document, error) {
	raw, err := decodeOne(data)
	if err != nil {
		return Document{}, err
	}
	var p parser
	doc := p.document(raw)
	// Range checks run on what was decoded; a field that already failed to
	// decode (or is missing) is not reported twice.
	var verr *ValidationError
	if errors.As(doc.Validate(), &verr) {
		for _, fe := range verr.Errors {
			if !p.covered(fe.Field) {
				p.errs = append(p.errs, fe)
			}
		}
	}
	if len(p.errs) > 0 {
		slices.SortStableFunc(p.errs, func(a, b FieldError) int {
			return cmp.Or(cmp.Compare(fieldRank(a.Field), fieldRank(b.Field)), cmp.Compare(fieldIndex(a.Field), fieldIndex(b.Field)))
		})
		return Document{}, &ValidationError{Errors: p.errs}
	}
	return doc, nil
}

// fieldRank orders errors by top-level field, in document order.
func fieldRank(field string) int {
	top := field
	if i := strings.IndexAny(field, ".["); i >= 0 {
		top = field[:i]
	}
	switch top {
	case "":
		return 0
	case "version":
		return 1
	case "legacy":
		return 2
	case classTransient:
		return 3
	case classHard:
		return 4
	case "codes":
		return 5
	case "fallback_models":
		return 6
	}
	return 7
}

// fieldIndex returns the first list index in field ("fallback_models[3]"
// → 3), or -1.
func fieldIndex(field string) int {
	i := strings.IndexByte(field, '[')
	if i < 0 {
		return -1
	}
	j := strings.IndexByte(field[i:], ']')
	if j < 0 {
		return -1
	}
	n, err := strconv.Atoi(field[i+1 : i+j])
	if err != nil {
		return -1
	}
	return n
}

// decodeOne reads exactly one JSON value from data.
func decodeOne(data []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if err == io.EOF {
			return nil, errors.New("policy: empty document")
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(data, se.Offset-1) // Offset is just past the bad byte
			return nil, fmt.Errorf("policy: line %d, column %d: %w", line, col, err)
		}
		return nil, fmt.Errorf("policy: %w", err)
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		rest := data[end:]
		line, col := position(data, end+int64(len(rest)-len(bytes.TrimLeft(rest, " \t\r\n"))))
		return nil, fmt.Errorf("policy: line %d, column %d: unexpected data after the document", line, col)
	}
	return raw, nil
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// parser decodes the document field by field so that every problem names
// its field. errs holds decoding and structural problems.
type parser struct {
	errs []FieldError
}

func (p *parser) fail(field, format string, args ...any) {
	p.errs = append(p.errs, FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
}

// covered reports whether field, or a field containing it, already has a
// decoding or structural error.
func (p *parser) covered(field string) bool {
	for _, fe := range p.errs {
		if fe.Field == field || fe.Field == "" ||
			strings.HasPrefix(field, fe.Field+".") || strings.HasPrefix(field, fe.Field+"[") {
			return true
		}
	}
	return false
}

type member struct {
	name string
	raw  json.RawMessage
}

// object returns the members of a JSON object in order, reporting duplicate
// keys. ok is false (and an error recorded) when raw is not an object.
func (p *parser) object(field string, raw json.RawMessage) (members []member, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		p.fail(field, "must be an object (got %s)", excerpt(raw))
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		p.fail(field, "%v", err)
		return nil, false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			p.fail(field, "%v", err)
			return nil, false
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			p.fail(field, "%v", err)
			return nil, false
		}
		if seen[name] {
			p.fail(join(field, name), "duplicate field")
			continue
		}
		seen[name] = true
		members = append(members, member{name, v})
	}
	return members, true
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// excerpt shows a raw JSON value in a message, bounded.
func excerpt(raw json.RawMessage) string {
	const limit = 40
	s := string(bytes.TrimSpace(raw))
	if s == "" {
		return "nothing"
	}
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return s
}

func (p *parser) intField(field string, raw json.RawMessage, dst *int) {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || json.Unmarshal(raw, dst) != nil {
		p.fail(field, "must be an integer (got %s)", excerpt(raw))
	}
}

func (p *parser) boolField(field string, raw json.RawMessage, dst *bool) {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || json.Unmarshal(raw, dst) != nil {
		p.fail(field, "must be true or false (got %s)", excerpt(raw))
	}
}

func (p *parser) stringField(field string, raw json.RawMessage, dst *string) bool {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || json.Unmarshal(raw, dst) != nil {
		p.fail(field, "must be a string (got %s)", excerpt(raw))
		return false
	}
	return true
}

// document decodes the whole document: a legacy rule name, or an object
// whose members are read (readTopLevel) before its classes are settled.
func (p *parser) document(raw json.RawMessage) Document {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		return p.legacyName(raw)
	}
	members, ok := p.object("", raw)
	if !ok {
		return Document{}
	}
	t := p.readTopLevel(members)
	d := t.d
	if !t.hasVersion {
		d.Version = Version // the only version there is
	}
	if t.hasLegacy {
		d = p.legacyClasses(t, d)
	} else {
		d = p.classes(t, d)
	}
	if t.hasFallback {
		d.FallbackModels = p.models(t.fallbackRaw)
	}
	d.EmptyTurn, d.StallTimeoutSeconds, d.HonourHintUpToSeconds = t.emptyTurn, t.stallSeconds, t.honourHint
	for _, name := range t.unknownClass {
		p.fail(name, "unknown class: only transient and hard are configurable (%s failures always stop)", name)
	}
	for _, name := range t.unknownField {
		p.fail(name, "unknown field (want version, transient, hard, codes, request, fallback_models, empty_turn, stall_timeout_seconds, honour_hint_up_to_seconds or legacy)")
	}
	return d
}

// legacyName decodes a document that is a legacy rule name (a JSON
// string).
func (p *parser) legacyName(raw json.RawMessage) Document {
	var name string
	if !p.stringField("legacy", raw, &name) {
		return Default()
	}
	d, err := FromLegacy(name)
	if err != nil {
		p.merge(err)
		return Default() // only the legacy name is wrong
	}
	return d
}

// topLevel is a document object's members as read: d holds the version,
// codes and request; the classes are settled once every member is read,
// since a legacy member replaces them.
type topLevel struct {
	d                          Document
	legacy                     string
	hasVersion                 bool
	hasLegacy, legacyOK        bool
	hasTransient, hasHard      bool
	transientRaw, hardRaw      json.RawMessage
	hasFallback                bool
	fallbackRaw                json.RawMessage
	emptyTurn                  string
	stallSeconds               int
	honourHint                 *int
	unknownClass, unknownField []string
}

// readTopLevel reads the members of a document object in order.
func (p *parser) readTopLevel(members []member) topLevel {
	var t topLevel
	for _, m := range members {
		switch m.name {
		case "version":
			t.hasVersion = true
			p.intField("version", m.raw, &t.d.Version)
		case "legacy":
			t.hasLegacy = true
			t.legacyOK = p.stringField("legacy", m.raw, &t.legacy)
		case classTransient:
			t.hasTransient, t.transientRaw = true, m.raw
		case classHard:
			t.hasHard, t.hardRaw = true, m.raw
		case "fallback_models":
			t.hasFallback, t.fallbackRaw = true, m.raw
		case "codes":
			t.d.Codes = p.codes(m.raw)
		case "empty_turn":
			p.stringField("empty_turn", m.raw, &t.emptyTurn)
		case "stall_timeout_seconds":
			p.intField("stall_timeout_seconds", m.raw, &t.stallSeconds)
		case "honour_hint_up_to_seconds":
			t.honourHint = new(int)
			p.intField("honour_hint_up_to_seconds", m.raw, t.honourHint)
		case classRequest:
			t.d.Request = p.request(m.raw)
		case classUnclassified:
			t.unknownClass = append(t.unknownClass, m.name)
		default:
			t.unknownField = append(t.unknownField, m.name)
		}
	}
	return t
}

// legacyClasses settles the classes of a document object with a legacy
// member: the legacy rule's, with d's version, request and codes.
func (p *parser) legacyClasses(t topLevel, d Document) Document {
	if t.hasTransient || t.hasHard {
		p.fail("legacy", "cannot be combined with transient or hard")
	}
	// A bad legacy name is the only problem to report: the classes it
	// would have produced are not validated on their own.
	ld := Default()
	if t.legacyOK {
		var err error
		if ld, err = FromLegacy(t.legacy); err != nil {
			p.merge(err)
			ld = Default()
		}
	}
	ld.Version, ld.Request, ld.Codes = d.Version, d.Request, d.Codes
	return ld
}

// classes settles the classes of a document object without a legacy
// member: each as written, and an omitted one the default, immediate skip.
func (p *parser) classes(t topLevel, d Document) Document {
	d.Transient, d.Hard = Default().Transient, Default().Hard
	if t.hasTransient {
		d.Transient = p.class(classTransient, t.transientRaw)
	}
	if t.hasHard {
		d.Hard = p.class(classHard, t.hardRaw)
	}
	return d
}

// merge appends the field errors of a *ValidationError.
func (p *parser) merge(err error) {
	var verr *ValidationError
	if errors.As(err, &verr) {
		p.errs = append(p.errs, verr.Errors...)
	}
}

func (p *parser) class(prefix string, raw json.RawMessage) ClassPolicy {
	var cp ClassPolicy
	members, ok := p.object(prefix, raw)
	if !ok {
		return cp
	}
	hasOutcome := false
	for _, m := range members {
		f := join(prefix, m.name)
		switch m.name {
		case "retry":
			cp.Retry = p.retry(f, m.raw)
		case "wait_for_reset":
			cp.WaitForReset = p.wait(f, m.raw)
		case "on_exhausted":
			hasOutcome = true
			var s string
			p.stringField(f, m.raw, &s)
			cp.OnExhausted = Outcome(s)
		default:
			p.fail(f, "unknown field (want retry, wait_for_reset or on_exhausted)")
		}
	}
	if !hasOutcome {
		cp.OnExhausted = Default().Transient.OnExhausted // the default skip
	}
	return cp
}

func (p *parser) retry(prefix string, raw json.RawMessage) Retry {
	var r Retry
	p.section(prefix, raw, &r.Enabled, map[string]*int{
		"max_retries":              &r.MaxRetries,
		"initial_interval_seconds": &r.InitialIntervalSeconds,
	}, "enabled, max_retries or initial_interval_seconds")
	return r
}

func (p *parser) wait(prefix string, raw json.RawMessage) WaitForReset {
	var w WaitForReset
	p.section(prefix, raw, &w.Enabled, map[string]*int{
		"max_wait_seconds": &w.MaxWaitSeconds,
	}, "enabled or max_wait_seconds")
	return w
}

// section parses a policy section: an "enabled" flag and integer fields;
// any other member is refused naming the fields it may have. A section
// written without "enabled" is enabled when it sets any field ("retry":
// {"max_retries":3,…} means retry), and disabled when empty.
func (p *parser) section(prefix string, raw json.RawMessage, enabled *bool, ints map[string]*int, want string) {
	members, ok := p.object(prefix, raw)
	if !ok {
		return
	}
	hasEnabled := false
	for _, m := range members {
		f := join(prefix, m.name)
		if m.name == "enabled" {
			hasEnabled = true
			p.boolField(f, m.raw, enabled)
		} else if dst, ok := ints[m.name]; ok {
			p.intField(f, m.raw, dst)
		} else {
			p.fail(f, "unknown field (want %s)", want)
		}
	}
	if !hasEnabled {
		*enabled = len(members) > 0
	}
}

func (p *parser) models(raw json.RawMessage) []string {
	var items []json.RawMessage
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || json.Unmarshal(raw, &items) != nil {
		p.fail("fallback_models", "must be an array of model names (got %s)", excerpt(raw))
		return nil
	}
	models := make([]string, 0, len(items))
	for i, item := range items {
		var s string
		p.stringField(fmt.Sprintf("fallback_models[%d]", i), item, &s)
		models = append(models, s)
	}
	if len(models) == 0 {
		return nil
	}
	return models
}

// codes parses the per-code overrides: an object whose members are
// semantic codes, each with the shape of a class policy. Code names and
// classes are checked by Validate.
func (p *parser) codes(raw json.RawMessage) map[string]ClassPolicy {
	members, ok := p.object("codes", raw)
	if !ok || len(members) == 0 {
		return nil
	}
	out := make(map[string]ClassPolicy, len(members))
	for _, m := range members {
		out[m.name] = p.class(join("codes", m.name), m.raw)
	}
	return out
}

// request parses the request section: {"compact_then_retry": bool}.
func (p *parser) request(raw json.RawMessage) Request {
	var r Request
	members, ok := p.object(classRequest, raw)
	if !ok {
		return r
	}
	for _, m := range members {
		f := join(classRequest, m.name)
		if m.name == "compact_then_retry" {
			p.boolField(f, m.raw, &r.CompactThenRetry)
		} else {
			p.fail(f, "unknown field (want compact_then_retry)")
		}
	}
	return r
}
