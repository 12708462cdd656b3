package observers

import (
	"strings"
	"unicode"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/internal/jsonscan"
)

// SessionUpdate is what the observers need from a session/update, located
// in the raw params without decoding: the session id (raw JSON string),
// the update kind, and the raw text of a text chunk.
type SessionUpdate struct {
	SessionRaw []byte // raw JSON string of params.sessionId
	Kind       UpdateKind
	TextRaw    []byte // raw JSON string of update.content.text (chunks only)
	// NonText is set for a chunk whose content block is not text (image,
	// audio, resource, resource_link): output by itself.
	NonText bool
}

// ParseUpdate locates the fields of a session/update's params.
func ParseUpdate(params []byte) (SessionUpdate, bool) {
	if u, ok := parseUpdateFast(params); ok {
		return u, true
	}
	return parseUpdateGeneral(params)
}

// parseUpdateGeneral walks the params object in any member order.
func parseUpdateGeneral(params []byte) (SessionUpdate, bool) {
	var u SessionUpdate
	var upd []byte
	c := jsonscan.NewCursor(params)
	for key, ok := c.Next(); ok && (u.SessionRaw == nil || upd == nil); key, ok = c.Next() {
		switch string(key) {
		case "sessionId":
			u.SessionRaw = c.Value()
		case "update":
			upd = c.Rest()
			if u.SessionRaw == nil {
				// Unusual order: the update must be skipped to find the id.
				upd = c.Value()
			}
		}
	}
	if u.SessionRaw == nil || upd == nil {
		return u, false
	}
	var content []byte
	c = jsonscan.NewCursor(upd)
	for key, ok := c.Next(); ok; key, ok = c.Next() {
		switch string(key) {
		case "sessionUpdate":
			u.Kind = UpdateOther
			if v := c.Value(); len(v) >= 2 && v[0] == '"' {
				u.Kind = kindOf(v[1 : len(v)-1])
			}
			if u.Kind != UpdateMessage && u.Kind != UpdateThought {
				return u, true
			}
			if content != nil {
				break
			}
			continue
		case "content":
			content = c.Rest()
			if u.Kind != UpdateOther {
				break
			}
			content = c.Value() // the kind comes later: keep the value
			continue
		default:
			continue
		}
		break
	}
	if content != nil {
		c = jsonscan.NewCursor(content)
		// Only a text block has a top-level "text"; a "type" other than
		// "text" seen first marks a non-text block.
		for key, ok := c.Next(); ok; key, ok = c.Next() {
			switch string(key) {
			case "text":
				u.TextRaw = c.Rest() // starts at the string; cut on demand
				return u, true
			case "type":
				if string(c.Value()) != `"text"` {
					u.NonText = true
					return u, true
				}
			}
		}
	}
	return u, true
}

// rawInner returns the bytes after the opening quote of a raw JSON string
// (possibly running past its closing quote: callers stop at an unescaped
// quote themselves).
func rawInner(raw []byte) []byte {
	if len(raw) < 2 || raw[0] != '"' {
		return nil
	}
	return raw[1:]
}

// TextBlank reports whether a raw JSON string is empty after Unicode
// trimming (such a chunk is neither output nor a clearing event). ASCII whitespace is judged on the raw bytes; only a string whose
// first non-ASCII-space character is non-ASCII or escaped is decoded.
func TextBlank(raw []byte) bool {
	in := rawInner(raw)
	for i := 0; i < len(in); i++ {
		switch c := in[i]; {
		case c == ' ' || c == '\t':
		case c == '"':
			return true
		case c == '\\' && i+1 < len(in) && (in[i+1] == 'n' || in[i+1] == 'r' || in[i+1] == 't'):
			i++
		case c >= 0x80 || c == '\\':
			return unicodeBlank(raw)
		default:
			return false
		}
	}
	return true
}

// unicodeBlank decodes the string (a bounded prefix first) and trims it.
func unicodeBlank(raw []byte) bool {
	v := jsonscan.Value(raw)
	s, complete, ok := jsonscan.StringPrefix(v, WindowBytes)
	if !ok {
		return false
	}
	if strings.TrimFunc(s, unicode.IsSpace) != "" {
		return false
	}
	if !complete {
		s, ok = jsonscan.String(v)
		return ok && strings.TrimFunc(s, unicode.IsSpace) == ""
	}
	return true
}

// mayStartWithFold reports whether the raw string, after leading ASCII
// whitespace, could start with prefix (ASCII, case-insensitive). It is a
// cheap filter: true means "decode and check properly".
func mayStartWithFold(raw []byte, prefix string) bool {
	in := rawInner(raw)
	i := 0
	for i < len(in) {
		c := in[i]
		if c == ' ' || c == '\t' {
			i++
			continue
		}
		if c == '\\' && i+1 < len(in) && (in[i+1] == 'n' || in[i+1] == 'r' || in[i+1] == 't') {
			i += 2
			continue
		}
		break
	}
	if i < len(in) && in[i] == '"' {
		return false // blank
	}
	if i < len(in) && (in[i] >= 0x80 || in[i] == '\\') {
		return true // unusual leading bytes: let the full check decide
	}
	rest := in[i:]
	if len(rest) < len(prefix) {
		return false
	}
	for j := 0; j < len(prefix); j++ {
		a, b := rest[j], prefix[j]
		if a == '\\' {
			return true
		}
		if a == '"' || lower(a) != lower(b) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Observe applies a parsed session/update to the session's active turn and
// reports whether the frame must be suppressed. Chunks that cannot be a
// control chunk are not decoded.
func (tr *Tracker) Observe(u SessionUpdate) (suppress bool) {
	tr.LastKind = u.Kind
	t := tr.activeRaw(u.SessionRaw)
	if t == nil {
		return false
	}
	t.Frames++
	t.lastKind, t.lastRequest = u.Kind, ""
	switch u.Kind {
	case UpdateMessage, UpdateThought:
		nonEmpty := u.NonText || (u.TextRaw != nil && !TextBlank(u.TextRaw))
		text, complete := "", false
		if u.Kind == UpdateMessage && nonEmpty && !t.Returned && u.TextRaw != nil {
			text, complete = tr.chunkText(t, u.TextRaw)
		}
		notes := t.Evidence.Diagnostics
		suppress = tr.update(t, u.Kind, text, complete, nonEmpty)
		if u.Kind == UpdateMessage && nonEmpty && !suppress && !t.Returned && t.Evidence.Diagnostics == notes {
			t.observeText(u.TextRaw)
		}
		return suppress
	default:
		return tr.update(t, u.Kind, "", false, false)
	}
}

// chunkText decodes a visible message chunk's text when something may
// need it — a signature's prefix, a retry note before any output, the
// turn's candidate error line — and only then: most chunks of a healthy answer are never
// decoded (the candidate error line closes at the answer's first word).
// complete is false when the text was cut (the window, or a chunk too
// long to be part of an error line).
func (tr *Tracker) chunkText(t *Turn, raw []byte) (string, bool) {
	need := false
	for i := range tr.Signatures {
		if tr.Signatures[i].Adapter == tr.Adapter && mayStartWithFold(raw, tr.Signatures[i].Prefix) {
			need = true
			break
		}
	}
	open := !t.text.closed
	// Retry notes matter while the turn has shown no output (the gate, a
	// turn of nothing but notes); after output a note changes nothing the
	// guard decides, so healthy answers pay nothing for them.
	if !need && !open && (t.Evidence.AssistantOutput || !classify.MayBeNote(raw)) {
		return "", false
	}
	v := jsonscan.Value(raw)
	text, complete, _ := jsonscan.StringPrefix(v, WindowBytes)
	// A long chunk is decoded whole only when it may belong to an error
	// line: the turn's text already starts one, or this window does.
	if !complete && open && len(raw) <= 6*classify.MaxReportBytes && (t.text.head || classify.StartsErrorLine(text)) {
		if s, ok := jsonscan.String(v); ok {
			return s, true
		}
	}
	return text, complete
}

// activeRaw finds the active turn by a raw JSON session id without
// allocating in the common (unescaped) case.
func (tr *Tracker) activeRaw(raw []byte) *Turn {
	if len(raw) < 2 || raw[0] != '"' {
		return nil
	}
	in := raw[1 : len(raw)-1]
	var s *session
	if bytesHasBackslash(in) {
		id, _ := jsonscan.String(raw)
		s = tr.sessions[id]
	} else if tr.last != nil && string(in) == tr.last.id {
		s = tr.last
	} else {
		s = tr.sessions[string(in)]
	}
	if s == nil {
		return nil
	}
	tr.last = s
	return s.active
}

func bytesHasBackslash(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// The layout agents write for streamed chunks, compared as bytes before
// falling back to walking the object.
const (
	fastSession = `{"sessionId":"`
	fastUpdate  = `","update":{"sessionUpdate":"`
	fastContent = `","content":{"type":"text","text":"`
)

func parseUpdateFast(params []byte) (SessionUpdate, bool) {
	var u SessionUpdate
	if len(params) < len(fastSession) || string(params[:len(fastSession)]) != fastSession {
		return u, false
	}
	rest := params[len(fastSession)-1:] // from the id's opening quote
	q := indexQuote(rest[1:])
	if q < 0 {
		return u, false
	}
	u.SessionRaw = rest[:q+2]
	rest = rest[q+1:] // at the id's closing quote
	if len(rest) < len(fastUpdate) || string(rest[:len(fastUpdate)]) != fastUpdate {
		return u, false
	}
	rest = rest[len(fastUpdate):]
	q = indexQuote(rest)
	if q < 0 {
		return u, false
	}
	u.Kind = kindOf(rest[:q])
	if u.Kind != UpdateMessage && u.Kind != UpdateThought {
		return u, true
	}
	rest = rest[q:]
	if len(rest) < len(fastContent) || string(rest[:len(fastContent)]) != fastContent {
		return SessionUpdate{}, false
	}
	u.TextRaw = rest[len(fastContent)-1:] // from the text's opening quote
	return u, true
}

// indexQuote finds the first quote in a short string without escapes; an
// escape sends the caller to the general path.
func indexQuote(b []byte) int {
	for i, c := range b {
		switch c {
		case '"':
			return i
		case '\\':
			return -1
		}
	}
	return -1
}
