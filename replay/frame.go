package replay

import (
	"bytes"
	"encoding/json"
	"strings"
)

// frameKind is what a JSON-RPC frame is, from its top-level members.
type frameKind int

const (
	kindOther        frameKind = iota // not a JSON-RPC message we can route
	kindRequest                       // method and id
	kindNotification                  // method, no id
	kindResponse                      // id, no method
)

// frameInfo is the little a router needs from a frame.
type frameInfo struct {
	kind   frameKind
	method string
	id     []byte   // the raw id value (the last one if repeated), aliasing the frame
	idSpan [][2]int // byte ranges of every top-level "id" value
}

// parseFrame finds the top-level method and id of a frame without decoding
// the rest. b must be valid JSON (the reader and the caller check);
// anything but an object yields kindOther.
func parseFrame(b []byte) frameInfo {
	var (
		fi        frameInfo
		hasMethod bool
		badMethod bool
	)
	ok := scanObject(b, func(key []byte, start, end int) {
		switch string(key) {
		case "method":
			hasMethod = true
			badMethod = json.Unmarshal(b[start:end], &fi.method) != nil
		case "id":
			fi.id = b[start:end]
			fi.idSpan = append(fi.idSpan, [2]int{start, end})
		}
	})
	switch {
	case !ok || badMethod:
		fi.kind = kindOther
	case hasMethod && fi.id != nil:
		fi.kind = kindRequest
	case hasMethod:
		fi.kind = kindNotification
	case fi.id != nil:
		fi.kind = kindResponse
	}
	return fi
}

// withID returns a copy of frame with every top-level id value replaced by
// id; all other bytes are unchanged.
func withID(frame []byte, fi frameInfo, id []byte) []byte {
	out := make([]byte, 0, len(frame)+len(id))
	prev := 0
	for _, sp := range fi.idSpan {
		out = append(out, frame[prev:sp[0]]...)
		out = append(out, id...)
		prev = sp[1]
	}
	return append(out, frame[prev:]...)
}

// idKey normalizes a raw id for matching: a string id by its value, a
// number by its text.
func idKey(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s:" + s
		}
	}
	return "n:" + string(raw)
}

// scanObject calls member for each member of the JSON object in b (a valid
// JSON text), with the key unescaped and the value's byte range. It reports
// false when b is not an object.
func scanObject(b []byte, member func(key []byte, start, end int)) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) && b[i] == '"' {
		kEnd := skipString(b, i)
		key := b[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var s string
			if json.Unmarshal(b[i:kEnd], &s) != nil {
				return false
			}
			key = []byte(s)
		}
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		start := skipSpace(b, i+1)
		end := skipValue(b, start)
		if end <= start {
			return false
		}
		member(key, start, end)
		i = skipSpace(b, end)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default:
		j := i
		for j < len(b) && strings.IndexByte(",}] \t\r\n", b[j]) < 0 {
			j++
		}
		return j
	}
}
