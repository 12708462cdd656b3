package transport

import (
	"bytes"

	"github.com/acp-guard/acp-guard/internal/jsonscan"
)

// Kind is what a frame is on the JSON-RPC level.
type Kind uint8

const (
	KindInvalid      Kind = iota // not a well-formed JSON object (forwarded anyway)
	KindRequest                  // method and id
	KindNotification             // method, no id
	KindResponse                 // id with result or error
	KindOther                    // a JSON object that is none of the above
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	case KindOther:
		return "other"
	}
	return "invalid"
}

// Msg is a frame with the spans the relay needs, found without decoding.
// Every slice aliases Line; nothing is copied.
type Msg struct {
	Line   []byte // the exact bytes, terminator included
	Kind   Kind
	Method string // requests and notifications
	ID     []byte // raw JSON id (requests and responses)
	Params []byte // raw params span, if any
	Result []byte // raw result span (responses)
	Error  []byte // raw error span (responses)
}

// Body returns the frame without its line terminator.
func (m *Msg) Body() []byte { return trimEOL(m.Line) }

// ParseMsg classifies a line. Only top-level members are located; values are
// skipped, not decoded.
func ParseMsg(line []byte) Msg {
	m := Msg{Line: line}
	body := trimEOL(line)
	var method []byte
	hasID := false
	err := jsonscan.Members(body, func(key, val []byte) bool {
		switch string(key) {
		case "method":
			method = val
		case "id":
			m.ID = val
			hasID = true
		case "params":
			m.Params = val
		case "result":
			m.Result = val
		case "error":
			m.Error = val
		}
		return true
	})
	if err != nil {
		m.Kind = KindInvalid
		return m
	}
	if method != nil {
		s, ok := jsonscan.String(method)
		if !ok {
			m.Kind = KindOther
			return m
		}
		m.Method = s
		if hasID && !bytes.Equal(m.ID, []byte("null")) {
			m.Kind = KindRequest
		} else {
			m.Kind = KindNotification
		}
		return m
	}
	if hasID && (m.Result != nil || m.Error != nil) {
		m.Kind = KindResponse
		return m
	}
	m.Kind = KindOther
	return m
}

// IDKey is a comparable form of a raw JSON id: numbers and strings that
// denote the same id compare equal regardless of spacing ("7" and 7 differ,
// as JSON-RPC says).
type IDKey string

// KeyOf returns the IDKey of a raw id.
func KeyOf(raw []byte) IDKey {
	if s, ok := jsonscan.String(raw); ok {
		return IDKey("s:" + s)
	}
	return IDKey("n:" + string(bytes.TrimSpace(raw)))
}
