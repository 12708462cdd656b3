package classify

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

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

// Text-reported failures. Some agents report a provider failure only as
// assistant text and end the turn end_turn; others print their own retry
// notes as text. These are the shapes of both, one definition for every
// adapter (the observers find them, the guard projects them); what a
// report or a note *means* is the engine's business (ClassifyText).

// Bounds of the text shapes.
const (
	// MaxReportBytes bounds an error report: the whole visible text of a
	// turn, trimmed. Longer text is never one error line.
	MaxReportBytes = 4096
	// MaxReportLines bounds the lines of an error report (a pretty-printed
	// JSON body included).
	MaxReportLines = 40
	// MaxNoteBytes bounds a retry note (one line).
	MaxNoteBytes = 512
)

// ErrorLine is an error report an agent printed as assistant text: one head
// ("Error:", "error:", "API Error:", "Error code:", a JS or Python error
// name such as "RateLimitError:"), optionally after a marker symbol (✕ ✖ ✗
// ❌ ⛔ ⚠) and an opening bracket ("[API Error: …]"), then the error itself
// (Body), on one line, optionally followed by continuation lines that are
// indented or belong to a body ({…} JSON or Python repr, <html>, quoted).
type ErrorLine struct {
	Head string // the head as written, e.g. "Error:", "API Error:", "RateLimitError:"
	Body string // the error after the head, trimmed (a closing bracket of "[…]" removed)
	// Status is an HTTP status in 400–599 the report names: leading the
	// body and not followed by a lower-case word ("Error: 400 This
	// model's…", "API Error: 529 {…}"; not "Error: 404 means…"), or after
	// HTTP, status, status code, error code, "Last error:" or a JSON
	// "code"/"status" member; 0 when none.
	Status int
	// ErrorBody: the report carries a provider error body: a JSON or
	// Python-repr object with an "error" member, or a "type" naming an
	// error ("error", "rate_limit_error", …).
	ErrorBody bool
}

// Shape reports whether the report carries a provider error shape (an HTTP
// status or an error body): then even text the catalogue does not
// recognise is a failure report, not prose.
func (r ErrorLine) Shape() bool { return r.Status != 0 || r.ErrorBody }

var (
	// reportStatusRe finds the HTTP status of an error line: after HTTP,
	// status, error code, "Last error:" or a JSON "code"/"status" member;
	// or leading the body when what follows is not a lower-case word
	// ("400 This model's…", "429 Too Many Requests", "529 {…}", but not
	// "404 means the route is wrong").
	reportStatusRe = regexp.MustCompile(`(?i:\bHTTP(?:/[0-9.]+)?\s*|\bstatus(?:\s+code)?\s*[:=]?\s*|\berror\s+code\s*[:=]?\s*|\blast\s+error\s*:\s*|["'](?:code|status)["']\s*:\s*)\(?([45][0-9]{2})\b|^\(?([45][0-9]{2})(?:$|[\s)]+(?:$|[^a-z\s])|[^\w\s.])`)
	reportBodyRe   = regexp.MustCompile(`(?i)["']error["']\s*:\s*[{"']|["']type["']\s*:\s*["'][a-z_]*error["']`)
	// firstPersonRe marks prose: an agent's own error line does not say
	// "I" (provider messages say "you" and "we", so those do not count).
	firstPersonRe = regexp.MustCompile(`(?i)\b(?:I|I'm|I've|I'll|I'd|let me|let's)\b`)
)

// ParseErrorLine reports whether text (a whole turn's visible text, or one
// chunk) is one error report, and parses it. It is the false-positive
// guard of the projection: the head must start the text; the text is at
// most MaxReportBytes and MaxReportLines; every line after the first is
// indented or part of a body; there is no Markdown code fence; and the
// first line is not first-person prose ("Error: I could not find …").
// Whether the report is a provider failure is decided by the caller: the
// engine recognises it, or it carries a provider error shape.
func ParseErrorLine(text string) (ErrorLine, bool) {
	t := strings.TrimFunc(text, unicode.IsSpace)
	if t == "" || len(t) > MaxReportBytes || firstPersonRe.MatchString(strings.SplitN(t, "\n", 2)[0]) {
		return ErrorLine{}, false
	}
	head, rest, bracketed, ok := parseHead(t)
	if !ok {
		return ErrorLine{}, false
	}
	body := strings.TrimFunc(t[rest:], unicode.IsSpace)
	if bracketed {
		body = strings.TrimFunc(strings.TrimSuffix(body, "]"), unicode.IsSpace)
	}
	if body == "" {
		return ErrorLine{}, false
	}
	if ErrorLineBroken(t) {
		return ErrorLine{}, false
	}
	r := ErrorLine{Head: head, Body: body, ErrorBody: reportBodyRe.MatchString(body)}
	if m := reportStatusRe.FindStringSubmatch(body); m != nil {
		r.Status, _ = strconv.Atoi(m[1] + m[2])
	}
	return r, true
}

// reportMarkers are symbols agents print before an error line. The
// first two (gemini-cli's and qwen-code's ✕) are heads by themselves; the
// others, common in prose and checklists, only before a word head.
var reportMarkers = []string{"✕", "✖", "✗", "❌", "⛔", "⚠"}

const headMarkers = 2

// skipLead skips a marker symbol (and its variation selector), an opening
// bracket and spaces at the start of t; head reports a marker that is a
// head by itself.
func skipLead(t string) (i int, bracketed bool) {
	i, bracketed, _ = skipLeadMarker(t)
	return i, bracketed
}

func skipLeadMarker(t string) (i int, bracketed, head bool) {
	for k, m := range reportMarkers {
		if strings.HasPrefix(t, m) {
			i = len(m)
			i += len(t[i:]) - len(strings.TrimPrefix(t[i:], "\uFE0F"))
			head = k < headMarkers
			break
		}
	}
	i += len(t[i:]) - len(strings.TrimLeft(t[i:], " \t"))
	if i < len(t) && t[i] == '[' {
		bracketed = true
		i++
		i += len(t[i:]) - len(strings.TrimLeft(t[i:], " \t"))
	}
	return i, bracketed, head
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// word returns the identifier at t[i:] and the offset after it.
func word(t string, i int) (string, int) {
	j := i
	for j < len(t) && isIdentByte(t[j]) {
		j++
	}
	return t[i:j], j
}

func skipSpaces(t string, i int) int {
	for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
		i++
	}
	return i
}

// parseHead finds the head of an error report at the start of t (trimmed):
// "Error:", "API Error:", "Error code:", or an identifier ending in
// "Error" or "Exception" followed by a colon — or a head marker (✕ ✖)
// followed by text. rest is where the body starts.
func parseHead(t string) (head string, rest int, bracketed, ok bool) {
	start, bracketed, marker := skipLeadMarker(t)
	if h, r, b, ok := wordHead(t, start, bracketed); ok {
		return h, r, b, true
	}
	if marker && start < len(t) {
		// "✕ Request failed with status 429": the marker is the head.
		return strings.TrimRight(t[:start], " \t["), start, bracketed, true
	}
	return "", 0, false, false
}

// wordHead finds a word head ("Error:", "API Error:", "Error code:",
// "RateLimitError:") at t[start:].
func wordHead(t string, start int, bracketed bool) (head string, rest int, _ bool, ok bool) {
	w, i := word(t, start)
	colon := func(j int) (int, bool) {
		j = skipSpaces(t, j)
		if j < len(t) && t[j] == ':' {
			return j + 1, true
		}
		return 0, false
	}
	switch lw := strings.ToLower(w); {
	case lw == "error":
		if j, ok := colon(i); ok {
			return t[start:j], j, bracketed, true
		}
		if w2, j := word(t, skipSpaces(t, i)); strings.EqualFold(w2, "code") {
			if j, ok := colon(j); ok {
				return t[start:j], j, bracketed, true
			}
		}
	case lw == "api":
		if w2, j := word(t, skipSpaces(t, i)); strings.EqualFold(w2, "error") {
			if j, ok := colon(j); ok {
				return t[start:j], j, bracketed, true
			}
		}
	case len(w) > len("Error") && (strings.HasSuffix(w, "Error") || strings.HasSuffix(w, "Exception")) && !(w[0] >= '0' && w[0] <= '9'):
		if i < len(t) && t[i] == ':' {
			return t[start : i+1], i + 1, bracketed, true
		}
	}
	return "", 0, false, false
}

// ErrorLinePending reports whether text (the start of a turn's visible
// text, trimmed or not) may still become an error line once more text
// arrives: what follows a marker symbol or bracket is, case-insensitively,
// a beginning of "Error", "Error code" or "API Error". A head named after
// an error type ("RateLimitError:") is recognised only when the text that
// arrives first already holds it: agents print their error lines whole,
// and waiting on every word that might grow into one would keep a healthy
// answer's first chunk from counting as output.
func ErrorLinePending(text string) bool {
	t := strings.TrimLeftFunc(text, unicode.IsSpace)
	if _, _, _, ok := parseHead(t); ok {
		return false // decided: a head
	}
	if len(t) > 32 {
		return false
	}
	i, _ := skipLead(t)
	if i == 0 && t != "" && t[0] >= 0x80 {
		// Possibly the first bytes of a marker symbol split across chunks.
		for _, m := range reportMarkers {
			if strings.HasPrefix(m, t) {
				return true
			}
		}
		return false
	}
	s := strings.ToLower(strings.Join(strings.Fields(t[i:]), " "))
	if s != "" && (strings.HasSuffix(t, " ") || strings.HasSuffix(t, "\t")) {
		// A whole word: what is written so far must be whole words of a head.
		return s == "error" || s == "api" || s == "api error" || s == "error code"
	}
	for _, head := range []string{"error code", "api error"} {
		if strings.HasPrefix(head, s) {
			return true
		}
	}
	return false
}

// Note is an agent's own retry note: a one-line status message saying
// that the agent retries by itself ("Retrying (attempt 1/2, waiting
// 2s)...", "API Error (Connection error.) · Retrying in 1 seconds…
// (attempt 1/10)", "Info: Request failed due to a transient API error.
// Retrying...", "Attempt 1 failed with status 502. Retrying with
// backoff..."). It is a diagnostic, not output.
type Note struct {
	Text string // the note, trimmed
	// End: the note closes the agent's retry loop ("Retry finished,
	// resuming."): a diagnostic, but not a retry.
	End bool
}

var (
	noteVerbRe     = regexp.MustCompile(`(?i)\bre-?try(?:ing)?\b`)
	noteAttemptRe  = regexp.MustCompile(`(?i)\b(?:attempt|try|retry)\s*#?\s*\d+(?:\s*(?:/|of)\s*\d+)?\b|\(\s*\d+\s*/\s*\d+\s*\)`)
	noteDelayRe    = regexp.MustCompile(`(?i)\b(?:in|after|waiting|wait|backoff|sleeping|delay)\s*:?\s*\d+(?:\.\d+)?\s*(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)\b`)
	noteHeadRe     = regexp.MustCompile(`(?i)^(?:\[[^\]\n]{1,24}\]\s*)?(?:info|warning|warn|notice|note)\s*:`)
	noteEllipsisRe = regexp.MustCompile(`(?i)\bre-?try(?:ing)?\b[^.…\n]{0,48}(?:\.\.\.|…)`)
	noteSymbols    = []string{"⚠", "↻", "⟳", "🔄", "⏳"}
	// noteEndRe is the note that closes an agent's retry loop: "Retry
	// finished, resuming." (pi), "Retry failed: 429".
	noteEndRe = regexp.MustCompile(`(?i)^(?:retry|retries|retrying)\s+(?:is\s+|was\s+|has\s+|have\s+)?(?:finished|done|complete|completed|exhausted|failed|succeeded|aborted|stopped|over)(?:$|[,.:;!])`)
)

// ParseNote reports whether text (one chunk, or one stderr line) is a
// retry note: a line IsRetryNote accepts, with these false-positive
// guards: one line of at most MaxNoteBytes; a retry verb ("retry",
// "retrying", "re-trying"); no first-person prose and no code fence; and
// the shape of a status line — an attempt counter
// ("attempt 2/5", "(3/10)", "attempt #2"), a delay ("in 2s", "waiting
// 500ms", "after 30 seconds"), a note head ("Info:", "Warning:",
// "[retry] Note:", a symbol such as ⚠ or ↻), or an ellipsis closing the
// retry phrase ("Retrying...", "retrying with backoff…") — or the note
// that closes a retry loop ("Retry finished, resuming.", "Retry failed:
// 429"). A sentence that merely talks about retrying ("Retry the
// request with a smaller batch.", "Retry failed requests by hand.") is not
// a note.
func ParseNote(text string) (Note, bool) {
	t := strings.TrimFunc(text, unicode.IsSpace)
	if t == "" || len(t) > MaxNoteBytes || strings.ContainsAny(t, "\n\r") || strings.Contains(t, "```") {
		return Note{}, false
	}
	// IsRetryNote is the engine's one test of "says it retries" (it keeps
	// such stderr lines from refining a verdict); a note in assistant text
	// must also say "retry" itself and not be prose.
	end := noteEndRe.MatchString(t)
	if !(IsRetryNote(t) || end) || !noteVerbRe.MatchString(t) || firstPersonRe.MatchString(t) {
		return Note{}, false
	}
	shaped := end || noteAttemptRe.MatchString(t) || noteDelayRe.MatchString(t) || noteHeadRe.MatchString(t) || noteEllipsisRe.MatchString(t)
	for _, s := range noteSymbols {
		shaped = shaped || strings.HasPrefix(t, s)
	}
	if !shaped {
		return Note{}, false
	}
	return Note{Text: t, End: end}, true
}

// MayBeNote is ParseNote's cheap prefilter over raw bytes (a JSON string
// as the agent wrote it, or a stderr line): short enough, and containing
// "etry" or "ETRY" (Retrying, retry, RETRYING). False means ParseNote
// would say no (a note in mixed case inside the word is not one).
func MayBeNote(raw []byte) bool {
	if len(raw) > 6*MaxNoteBytes+2 { // escapes may inflate a note
		return false
	}
	return bytes.Contains(raw, []byte("etry")) || bytes.Contains(raw, []byte("ETRY"))
}

var statedRetriesRe = regexp.MustCompile(`(?i)\bretried\s+(\d{1,3})\s+times?\b|\bafter\s+(\d{1,3})\s+(?:retries|retry\s+attempts)\b|\bafter\s+(\d{1,3})\s+attempts\b`)

// StatedRetries returns how many times an agent says, in an error report,
// that it retried ("retried 5 times", "after 3 retries"; "after 4
// attempts" is 3 retries), or 0.
func StatedRetries(text string) int {
	m := statedRetriesRe.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	for i, s := range m[1:] {
		if s == "" {
			continue
		}
		n, _ := strconv.Atoi(s)
		if i == 2 {
			n-- // attempts include the first
		}
		return max(n, 0)
	}
	return 0
}

// ClassifyText classifies text an agent printed for the user — an error
// report or a retry note in its assistant text — for any adapter: the
// adapter's own message-chunk signatures first (they refine), then, when
// none of them speaks, the same text as the agent's own error report
// (SourceRPCError: the structured and provider-agnostic layers). ev.Source
// is ignored; ev.Message holds the text. An observed engine sees each
// envelope it classified.
func (e *Engine) ClassifyText(ev Evidence) Verdict {
	ev.Source = SourceMessageChunk
	v := e.Classify(ev)
	if v.Code != CodeUnclassified || v.Reason == ReasonStale {
		return v
	}
	ev.Source = SourceRPCError
	return e.Classify(ev)
}

// StartsErrorLine reports whether text starts with an error line's head
// (after leading space, a marker symbol and an opening bracket).
func StartsErrorLine(text string) bool {
	_, _, _, ok := parseHead(strings.TrimLeftFunc(text, unicode.IsSpace))
	return ok
}

// ErrorLineBroken reports whether text (the start of a turn's visible
// text) can no longer be one error line however it continues: a code
// fence, more than MaxReportLines lines, a line after the first that is
// neither indented nor part of a body (a new paragraph of prose), or a
// first line that is first-person prose.
func ErrorLineBroken(text string) bool {
	t := strings.TrimLeftFunc(text, unicode.IsSpace)
	if strings.Contains(t, "```") {
		return true
	}
	lines := strings.Split(t, "\n")
	if len(lines) > MaxReportLines || (len(lines) > 1 && firstPersonRe.MatchString(lines[0])) {
		return true
	}
	for _, l := range lines[1:] {
		l = strings.TrimRight(l, " \t\r")
		if l != "" && !strings.ContainsRune(" \t{}[]<>\"'", rune(l[0])) {
			return true
		}
	}
	return false
}

// ReportedFailure is the one test that makes text an agent printed a
// text-reported provider failure: one error line (ParseErrorLine) that the
// engine recognises (ClassifyText gives a verdict that is not
// unclassified, and not one of the status tier alone on a number the
// line's grammar does not take for a status) or that carries a provider
// error shape (an HTTP status, an error body). ev.Message holds the text;
// the verdict is the one to report.
func (e *Engine) ReportedFailure(ev Evidence) (ErrorLine, Verdict, bool) {
	l, ok := ParseErrorLine(ev.Message)
	if !ok {
		return l, Verdict{}, false
	}
	v := e.ClassifyText(ev)
	if v.Code == CodeUnclassified {
		return l, v, l.Shape()
	}
	if r, ok := e.Rule(v.Rule); ok && r.Tier == TierStatus && l.Status == 0 {
		// Only the status layer spoke, on a number the error line's own
		// grammar does not read as a status ("Error: 500 lines were too
		// many."): in assistant text that is prose.
		return l, v, false
	}
	return l, v, true
}

// Quiet returns an engine that classifies like e without calling its
// Observed callback: for classifications that are not a failure's verdict
// (an agent's retry note weighed against the error that follows, a chunk
// tested as it streams), so that what an observer sees is the evidence of
// the failures only.
func (e *Engine) Quiet() *Engine {
	c := *e
	c.observe = nil
	return &c
}
