package classify

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/acp-guard/acp-guard/internal/jsonscan"
)

// Input bounds: the engine never scans more than this much text per field,
// decodes at most maxDocs embedded JSON documents and walks at most
// maxNodes JSON objects, whatever the evidence holds.
const (
	MaxScanBytes = 64 << 10
	maxDocs      = 16
	maxNodes     = 4096
	maxLeaves    = 512
	maxDepth     = 3 // JSON found inside strings of JSON found inside strings…
)

// view is the bounded, lazily computed text and structure of one Evidence.
type view struct {
	ev      *Evidence
	adapter string

	texts     map[string]string // field → text (bounded)
	lowers    map[string]string // field → lower-cased text, for literal prefilters
	objects   []map[string]any  // every JSON object reachable from data and embedded documents
	objectsOK bool
	st        derivedStatus // status.go
	statusOK  bool
	mention   bool // mention.go
	mentionOK bool
	// discourseOn caches proseDiscourse (mention.go).
	discourseOn, discourseOK bool
	// shaped caches errorShaped (mention.go).
	shaped, shapedOK bool
}

func newView(ev *Evidence) *view {
	return &view{ev: ev, adapter: NormalizeAdapter(ev.Adapter), texts: map[string]string{}, lowers: map[string]string{}}
}

// text returns the bounded text of a field.
func (v *view) text(field string) string {
	if t, ok := v.texts[field]; ok {
		return t
	}
	var t string
	switch field {
	case FieldMessage:
		t = unwrap(headBytes(v.ev.Message, MaxScanBytes))
	case FieldData:
		t = dataText(v.ev.Data)
	case FieldStderr:
		t = stderrText(v.ev.Stderr)
	}
	v.texts[field] = t
	return t
}

func (v *view) lower(field string) string {
	if t, ok := v.lowers[field]; ok {
		return t
	}
	t := strings.ToLower(v.text(field))
	v.lowers[field] = t
	return t
}

// headBytes returns at most n leading bytes of s.
func headBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// unwrap undoes what terminals and pretty-printers do to one message:
// a line break and the indentation after it become one space (a wrapped
// "Provider\n   returned error" reads as "Provider returned error"), and
// typographic apostrophes become ASCII ones, so phrases match however the
// text was laid out.
//
// A box-drawn frame (a rich traceback, a test report's table, a log
// viewer's line-number gutter: │ ┃ ║) is layout too: its rules read as
// spaces, so a message split across a table's cells reads as one text.
// So is a line break printed as its escape (the two characters \n or \r:
// a JSON body dumped inside a log line or a stack trace): it reads as the
// break it stands for, so "…details.\nPlease retry in 5s" has a word
// boundary before "Please". A character escaped as \\uXXXX reads as
// itself (decodeEscapedRune).
func unwrap(s string) string {
	if !strings.ContainsAny(s, "\n\r’│┃║\\") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		switch {
		case boxRule(s[i:]) > 0:
			i += boxRule(s[i:])
			if len(b) > 0 && b[len(b)-1] != ' ' {
				b = append(b, ' ')
			}
			for i < len(s) && (s[i] == ' ' || s[i] == '\t' || boxRule(s[i:]) > 0) {
				if n := boxRule(s[i:]); n > 0 {
					i += n
				} else {
					i++
				}
			}
		case s[i] == '\n' || s[i] == '\r' || escapedBreak(s[i:]):
			for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
				b = b[:len(b)-1]
			}
			for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || escapedBreak(s[i:])) {
				if escapedBreak(s[i:]) {
					i++
				}
				i++
			}
			b = append(b, ' ')
		case strings.HasPrefix(s[i:], "’"):
			b = append(b, '\'')
			i += len("’")
		default:
			if r, n := decodeEscapedRune(s[i:]); n > 0 {
				if r < ' ' {
					r = ' '
				}
				b = utf8.AppendRune(b, r)
				i += n
				continue
			}
			b = append(b, s[i])
			i++
		}
	}
	return string(b)
}

// decodeEscapedRune decodes the JSON \\uXXXX escape s starts with and
// returns the character and the escape's length (12 for a surrogate pair),
// or 0. Encoders escape what they need not: Python's json.dumps every
// non-ASCII letter (a Chinese message reads \\u8bf7\\u6c42…), Go's < > &
// (\\u003c=). Decoded, the words read.
func decodeEscapedRune(s string) (rune, int) {
	hex4 := func(s string) (rune, bool) {
		if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range s[2:6] {
			switch {
			case c >= '0' && c <= '9':
				r = r<<4 | (c - '0')
			case c >= 'a' && c <= 'f':
				r = r<<4 | (c - 'a' + 10)
			case c >= 'A' && c <= 'F':
				r = r<<4 | (c - 'A' + 10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	r, ok := hex4(s)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if lo, ok := hex4(s[6:]); ok {
			if c := utf16.DecodeRune(r, lo); c != utf8.RuneError {
				return c, 12
			}
		}
		return 0, 0
	}
	return r, 6
}

// escapedBreak reports whether s starts with a line break's escape: a
// backslash and n or r (after an escaped backslash too, "\\\\n", a body
// escaped twice; a Windows path's "\\new" reads as a break as well, which
// no rule's words mind).
func escapedBreak(s string) bool {
	return len(s) >= 2 && s[0] == '\\' && (s[1] == 'n' || s[1] == 'r')
}

// boxRule returns the length of the vertical box-drawing rule s starts
// with (│ ┃ ║), or 0.
func boxRule(s string) int {
	for _, r := range []string{"│", "┃", "║"} {
		if strings.HasPrefix(s, r) {
			return len(r)
		}
	}
	return 0
}

// stderrText joins the most recent stderr lines that fit in MaxScanBytes.
func stderrText(lines []string) string {
	total := 0
	start := len(lines)
	for start > 0 {
		l := len(lines[start-1]) + 1
		if total+l > MaxScanBytes {
			break
		}
		total += l
		start--
	}
	if start == len(lines) && len(lines) > 0 {
		// A single line longer than the cap: keep its tail.
		last := lines[len(lines)-1]
		return last[len(last)-MaxScanBytes:]
	}
	// An indented line continues the one before it (a wrapped message, a
	// stack frame under its error): they read as one line.
	var b strings.Builder
	b.Grow(total)
	for i, l := range lines[start:] {
		if i > 0 {
			if t := strings.TrimLeft(l, " \t│┃║"); len(t) < len(l) {
				b.WriteByte(' ')
				l = t
			} else {
				b.WriteByte('\n')
			}
		}
		b.WriteString(unwrap(l))
	}
	return b.String()
}

// dataText is the text rules see for Evidence.Data: the string leaves of
// the JSON value joined by newlines, or the raw bytes when it is not JSON.
func dataText(data json.RawMessage) string {
	if len(bytes.TrimSpace(data)) == 0 {
		return ""
	}
	raw := data
	if len(raw) > MaxScanBytes {
		raw = raw[:MaxScanBytes]
	}
	val, ok := decodeJSON(raw)
	if !ok {
		return string(raw)
	}
	var leaves []string
	size := 0
	walkStrings(val, func(s string) bool {
		leaves = append(leaves, unwrap(s))
		size += len(s) + 1
		return len(leaves) < maxLeaves && size < MaxScanBytes
	})
	return headBytes(strings.Join(leaves, "\n"), MaxScanBytes)
}

func decodeJSON(b []byte) (any, bool) {
	jsonscan.Note(b)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// walkStrings calls f for each string leaf in document order until f
// returns false.
func walkStrings(v any, f func(string) bool) bool {
	switch x := v.(type) {
	case string:
		return f(x)
	case []any:
		for _, e := range x {
			if !walkStrings(e, f) {
				return false
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if !walkStrings(x[k], f) {
				return false
			}
		}
	}
	return true
}

// objectNodes returns every JSON object in the evidence: those inside
// Evidence.Data and inside JSON objects embedded in the message, the data's
// strings and stderr (e.g. `API Error: 529 {"type":"error",…}`).
func (v *view) objectNodes() []map[string]any {
	if v.objectsOK {
		return v.objects
	}
	v.objectsOK = true
	c := &collector{}
	if d := bytes.TrimSpace(v.ev.Data); len(d) > 0 && len(d) <= MaxScanBytes {
		if val, ok := decodeJSON(d); ok {
			c.addValue(val, 0)
		}
	}
	c.scanText(v.text(FieldMessage), 0)
	// Stderr line by line: stack traces and JS object dumps are full of
	// braces that are not JSON, and must not use up the budget of the line
	// that holds the provider's error body.
	stderr := v.text(FieldStderr)
	before := len(c.objects)
	for _, line := range strings.Split(stderr, "\n") {
		if strings.IndexByte(line, '{') >= 0 {
			c.scanText(line, 0)
		}
	}
	if len(c.objects) == before && strings.IndexByte(stderr, '{') >= 0 && strings.IndexByte(stderr, '\n') >= 0 {
		// No line held a whole body: perhaps a terminal wrapped one over
		// lines. Read the lines as one text (scanText mends the breaks).
		c.scanText(stderr, 0)
	}
	v.objects = c.objects
	return v.objects
}

type collector struct {
	objects []map[string]any
	docs    int
}

func (c *collector) addValue(val any, depth int) {
	switch x := val.(type) {
	case map[string]any:
		if len(c.objects) >= maxNodes {
			return
		}
		c.objects = append(c.objects, x)
		for _, k := range sortedKeys(x) {
			c.addValue(x[k], depth)
		}
	case []any:
		for _, e := range x {
			c.addValue(e, depth)
		}
	case string:
		if depth < maxDepth && strings.IndexByte(x, '{') >= 0 {
			c.scanText(x, depth+1)
		}
	}
}

// scanText decodes JSON objects embedded in free text, trying at most a few
// opening braces so that adversarial text costs linear time.
func (c *collector) scanText(s string, depth int) {
	const maxTries = 8
	tries := 0
	mended := false
	for i := 0; i < len(s) && tries < maxTries && c.docs < maxDocs; {
		j := strings.IndexByte(s[i:], '{')
		if j < 0 {
			return
		}
		i += j
		tries++
		jsonscan.Note(s[i:])
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		dec.UseNumber()
		var val any
		if err := dec.Decode(&val); err == nil {
			c.docs++
			c.addValue(val, depth)
			i += int(dec.InputOffset())
			continue
		}
		// Not JSON: perhaps a Python repr of the body ({'error': {…}}).
		if val, n, ok := decodePyRepr(s[i:]); ok {
			c.docs++
			c.addValue(val, depth)
			i += n
			continue
		}
		// Or a body escaped inside a JSON string whose own quotes the
		// text lost ("message": "… failed: {\"error\":{…}}"): read
		// the string's content up to its closing quote, once unescaped.
		if body, n, ok := escapedBody(s[i:]); ok && depth < maxDepth {
			c.scanText(body, depth+1)
			i += n
			continue
		}
		// Or a body a terminal wrapped over lines, a break inside a string
		// ("'The engine is curre\nntly overloaded'"): read without its
		// line breaks, once per text.
		if !mended && strings.ContainsAny(s[i:], "\n\r") {
			mended = true
			if val, ok := decodeMended(s[i:]); ok {
				c.docs++
				c.addValue(val, depth)
				i++
				continue
			}
		}
		i++
	}
}

// decodeMended decodes the JSON or Python-repr object s opens with its line
// breaks removed (a terminal's wrap can fall inside a string, where a raw
// break is not allowed).
func decodeMended(s string) (any, bool) {
	if len(s) > MaxScanBytes {
		s = s[:MaxScanBytes]
	}
	m := strings.NewReplacer("\r\n", "", "\n", "", "\r", "").Replace(s)
	dec := json.NewDecoder(strings.NewReader(m))
	dec.UseNumber()
	var val any
	if err := dec.Decode(&val); err == nil {
		return val, true
	}
	if val, _, ok := decodePyRepr(m); ok {
		return val, true
	}
	return nil, false
}

// escapedBody returns the content of the JSON string that s, a brace
// followed by an escaped quote, opens inside of, unescaped, and the bytes
// it spans: s up to its first unescaped quote (or its end), read as the
// inside of a JSON string literal.
func escapedBody(s string) (string, int, bool) {
	if !strings.HasPrefix(strings.TrimLeft(s[1:], " \t\r\n"), `\"`) {
		return "", 0, false
	}
	end := len(s)
	for k := 1; k < len(s); k++ {
		if s[k] == '\\' {
			k++
			continue
		}
		if s[k] == '"' {
			end = k
			break
		}
	}
	var body string
	if err := json.Unmarshal([]byte(`"`+s[:end]+`"`), &body); err != nil {
		return "", 0, false
	}
	return body, end, true
}

// lookup returns the values at path below node; arrays are traversed.
func lookup(node any, path []string, out []any) []any {
	if len(path) == 0 {
		if arr, ok := node.([]any); ok {
			return append(out, arr...)
		}
		return append(out, node)
	}
	switch x := node.(type) {
	case map[string]any:
		if next, ok := x[path[0]]; ok {
			return lookup(next, path[1:], out)
		}
	case []any:
		for _, e := range x {
			out = lookup(e, path, out)
		}
	}
	return out
}

// scalarText renders a JSON scalar for comparison; ok is false for
// objects and arrays.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		if x {
			return "true", true
		}
		return "false", true
	case nil:
		return "null", true
	}
	return "", false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic walk order
	return keys
}
