package observers

import (
	"github.com/acp-guard/acp-guard/internal/jsonscan"
)

// SessionUpdate is what the observers need from a session/update, located
// in the raw params without decoding: the session id (raw JSON string),
// the update kind, and the raw text of a text chunk.
type SessionUpdate struct {
	SessionRaw []byte // raw JSON string of params.sessionId
	Kind       UpdateKind
	TextRaw    []byte // raw JSON string of update.content.text (chunks only)
}

// ParseUpdate locates the fields of a session/update's params.
func ParseUpdate(params []byte) (SessionUpdate, bool) {
	var u SessionUpdate
	u.SessionRaw = jsonscan.Value(jsonscan.Seek(params, "sessionId"))
	upd := jsonscan.Seek(params, "update")
	if u.SessionRaw == nil || upd == nil {
		return u, false
	}
	switch string(jsonscan.Value(jsonscan.Seek(upd, "sessionUpdate"))) {
	case `"agent_message_chunk"`:
		u.Kind = UpdateMessage
	case `"agent_thought_chunk"`:
		u.Kind = UpdateThought
	case `"tool_call"`:
		u.Kind = UpdateToolCall
	case `"tool_call_update"`:
		u.Kind = UpdateToolCallUpdate
	case `"plan"`:
		u.Kind = UpdatePlan
	default:
		u.Kind = UpdateOther
	}
	if u.Kind == UpdateMessage || u.Kind == UpdateThought {
		u.TextRaw = jsonscan.Value(jsonscan.Seek(jsonscan.Seek(upd, "content"), "text"))
	}
	return u, true
}

// rawInner returns the bytes between the quotes of a raw JSON string.
func rawInner(raw []byte) []byte {
	if len(raw) < 2 || raw[0] != '"' {
		return nil
	}
	return raw[1 : len(raw)-1]
}

// RawBlank reports whether a raw JSON string holds only whitespace (ASCII
// spaces or the \n \r \t escapes). Non-ASCII text counts as non-blank.
func RawBlank(raw []byte) bool {
	in := rawInner(raw)
	for i := 0; i < len(in); i++ {
		switch in[i] {
		case ' ', '\t':
		case '\\':
			if i+1 < len(in) && (in[i+1] == 'n' || in[i+1] == 'r' || in[i+1] == 't') {
				i++
				continue
			}
			return false
		default:
			return false
		}
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
		if lower(a) != lower(b) {
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
	t := tr.activeRaw(u.SessionRaw)
	if t == nil {
		return false
	}
	switch u.Kind {
	case UpdateMessage, UpdateThought:
		nonEmpty := u.TextRaw != nil && !RawBlank(u.TextRaw)
		text, complete := "", false
		if u.Kind == UpdateMessage && nonEmpty && !t.Returned {
			for i := range tr.Signatures {
				if tr.Signatures[i].Adapter == tr.Adapter && mayStartWithFold(u.TextRaw, tr.Signatures[i].Prefix) {
					text, complete, _ = jsonscan.StringPrefix(u.TextRaw, WindowBytes)
					break
				}
			}
		}
		return tr.update(t, u.Kind, text, complete, nonEmpty)
	default:
		return tr.update(t, u.Kind, "", false, false)
	}
}

// activeRaw finds the active turn by a raw JSON session id without
// allocating in the common (unescaped) case.
func (tr *Tracker) activeRaw(raw []byte) *Turn {
	in := rawInner(raw)
	var s *session
	if bytesHasBackslash(in) {
		id, _ := jsonscan.String(raw)
		s = tr.sessions[id]
	} else {
		s = tr.sessions[string(in)]
	}
	if s == nil {
		return nil
	}
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
