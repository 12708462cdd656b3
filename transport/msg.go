package transport

import (
	"bytes"
	"encoding/binary"
	"strconv"

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
	var m Msg
	m.parse(line)
	return m
}

// parse is ParseMsg into m, every field set: the relay parses each frame
// into the one Msg it keeps, without copying a Msg per frame.
func (m *Msg) parse(line []byte) {
	body := trimEOL(line)
	if parseNotificationFast(m, line, body) {
		jsonscan.Note(body) // the general path's walk is counted by jsonscan
		return
	}
	*m = Msg{Line: line}
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
		return
	}
	if method != nil {
		if !jsonscan.IsString(method) {
			m.Kind = KindOther
			return
		}
		m.Method = internMethod(method[1 : len(method)-1])
		if hasID && !bytes.Equal(m.ID, []byte("null")) {
			m.Kind = KindRequest
		} else {
			m.Kind = KindNotification
		}
		return
	}
	if hasID && (m.Result != nil || m.Error != nil) {
		m.Kind = KindResponse
		return
	}
	m.Kind = KindOther
}

// IDKey is a comparable form of a raw JSON id: strings compare by their
// decoded text, numbers by their value — 2, 2.0, 2e0 and 20e-1 are one id,
// as are 0 and -0 — and a string never equals a number ("7" and 7 differ,
// as JSON-RPC says). Agents written in JavaScript may echo 2 as 2.0.
type IDKey string

// KeyOf returns the IDKey of a raw id.
func KeyOf(raw []byte) IDKey {
	if s, ok := jsonscan.String(raw); ok {
		return IDKey("s:" + s)
	}
	raw = bytes.TrimSpace(raw)
	if k, ok := numberKey(raw); ok {
		return IDKey(k)
	}
	return IDKey("n:" + string(raw))
}

// numberKey returns the canonical form of a JSON number, exactly (no
// float rounding, so 9007199254740993 stays apart from …992):
// "n:" [-] digits "e" exponent, with the digits free of leading and
// trailing zeros; zero is "n:0". ok is false for anything that is not a
// JSON number.
func numberKey(b []byte) (string, bool) {
	i, neg := 0, false
	if i < len(b) && b[i] == '-' {
		neg, i = true, i+1
	}
	intStart := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	intDigits := b[intStart:i]
	if len(intDigits) == 0 || len(intDigits) > 1 && intDigits[0] == '0' {
		return "", false
	}
	var frac []byte
	if i < len(b) && b[i] == '.' {
		i++
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if frac = b[s:i]; len(frac) == 0 {
			return "", false
		}
	}
	exp := 0
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		e, err := strconv.Atoi(string(b[i+1:])) // accepts the sign JSON allows
		if err != nil || e > 1<<20 || e < -(1<<20) {
			return "", false
		}
		exp, i = e, len(b)
	}
	if i != len(b) {
		return "", false
	}
	digits := make([]byte, 0, len(intDigits)+len(frac))
	digits = append(append(digits, intDigits...), frac...)
	exp -= len(frac)
	lead := 0
	for lead < len(digits) && digits[lead] == '0' {
		lead++
	}
	digits = digits[lead:]
	if len(digits) == 0 {
		return "n:0", true
	}
	for digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	k := make([]byte, 0, len(digits)+16)
	k = append(k, "n:"...)
	if neg {
		k = append(k, '-')
	}
	k = append(k, digits...)
	k = append(k, 'e')
	k = strconv.AppendInt(k, int64(exp), 10)
	return string(k), true
}

const notificationPrefix = `{"jsonrpc":"2.0","method":"`

// notificationWords are notificationPrefix as four little-endian words
// (at 0, 8, 16 and its last 8 bytes), for hasNotificationPrefix.
var notificationWords = func() (w [4]uint64) {
	p := []byte(notificationPrefix)
	for i, off := range [4]int{0, 8, 16, len(p) - 8} {
		w[i] = binary.LittleEndian.Uint64(p[off:])
	}
	return w
}()

// hasNotificationPrefix is bytes.HasPrefix(b, notificationPrefix) in four
// word comparisons: it runs on every frame.
func hasNotificationPrefix(b []byte) bool {
	const n = len(notificationPrefix)
	if len(b) < n {
		return false
	}
	b = b[:n]
	return binary.LittleEndian.Uint64(b) == notificationWords[0] &&
		binary.LittleEndian.Uint64(b[8:]) == notificationWords[1] &&
		binary.LittleEndian.Uint64(b[16:]) == notificationWords[2] &&
		binary.LittleEndian.Uint64(b[n-8:]) == notificationWords[3]
}

// parseNotificationFast handles the layout nearly every ACP implementation
// writes for notifications — {"jsonrpc":"2.0","method":"…","params":{…}} —
// without walking the params: the method is read in place and params is
// the object between its opening brace and the frame's closing one. The
// params' inside is not validated here (observers read only what they
// need, in place); anything else takes the general path.
func parseNotificationFast(m *Msg, line, body []byte) bool {
	if !hasNotificationPrefix(body) {
		return false
	}
	rest := body[len(notificationPrefix):]
	q := bytes.IndexByte(rest, '"')
	if q < 0 || bytes.IndexByte(rest[:q], '\\') >= 0 {
		return false
	}
	method := rest[:q]
	const paramsKey = `,"params":`
	rest = rest[q+1:]
	if len(rest) < len(paramsKey) || string(rest[:len(paramsKey)]) != paramsKey {
		return false
	}
	params := trimSpaceRight(rest[len(paramsKey):])
	if len(params) < 3 || params[len(params)-1] != '}' {
		return false
	}
	params = trimSpaceRight(params[:len(params)-1]) // the frame's own brace
	if len(params) < 2 || params[0] != '{' || params[len(params)-1] != '}' {
		return false
	}
	*m = Msg{Line: line, Kind: KindNotification, Method: internMethod(method), Params: params}
	return true
}

func trimSpaceRight(b []byte) []byte {
	n := len(b)
	for n > 0 && (b[n-1] == ' ' || b[n-1] == '\t' || b[n-1] == '\r' || b[n-1] == '\n') {
		n--
	}
	return b[:n]
}

// internMethod returns the method name, without allocating for the
// methods ACP defines (raw is the name between its quotes).
func internMethod(raw []byte) string {
	switch string(raw) {
	case "session/update":
		return "session/update"
	case "session/prompt":
		return "session/prompt"
	case "session/cancel":
		return "session/cancel"
	case "session/new":
		return "session/new"
	case "session/load":
		return "session/load"
	case "session/request_permission":
		return "session/request_permission"
	case "initialize":
		return "initialize"
	case "fs/read_text_file":
		return "fs/read_text_file"
	case "fs/write_text_file":
		return "fs/write_text_file"
	}
	if bytes.IndexByte(raw, '\\') >= 0 {
		s, _ := jsonscan.String(append(append([]byte{'"'}, raw...), '"'))
		return s
	}
	return string(raw)
}
