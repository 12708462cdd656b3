package replay

import (
	"github.com/acp-guard/acp-guard/transport"
)

// frameKind is what a JSON-RPC frame is, from its top-level members.
type frameKind int

const (
	kindOther        frameKind = iota // not a JSON-RPC message we can route
	kindRequest                       // method and id
	kindNotification                  // method, no id
	kindResponse                      // id with result or error
)

// frameInfo is the little a router needs from a frame.
type frameInfo struct {
	kind   frameKind
	method string
	id     []byte // the raw id value, aliasing the frame
	idAt   int    // where id starts in the frame
	// isError marks a response carrying an error.
	isError bool
}

// parseFrame finds the top-level method and id of a frame with the
// relay's own scanner (transport.ParseMsg), without decoding the rest.
func parseFrame(b []byte) frameInfo {
	m := transport.ParseMsg(b)
	fi := frameInfo{method: m.Method, id: m.ID}
	switch m.Kind {
	case transport.KindRequest:
		fi.kind = kindRequest
	case transport.KindNotification:
		fi.kind = kindNotification
	case transport.KindResponse:
		fi.kind, fi.isError = kindResponse, m.Error != nil
	default:
		fi.kind, fi.method = kindOther, ""
	}
	if m.ID != nil {
		fi.idAt = cap(b) - cap(m.ID)
	}
	return fi
}

// withID returns a copy of frame with its top-level id value replaced by
// id; all other bytes are unchanged.
func withID(frame []byte, fi frameInfo, id []byte) []byte {
	if fi.id == nil {
		return append([]byte(nil), frame...)
	}
	out := make([]byte, 0, len(frame)+len(id))
	out = append(out, frame[:fi.idAt]...)
	out = append(out, id...)
	return append(out, frame[fi.idAt+len(fi.id):]...)
}

// idKey normalizes a raw id for matching: a string id by its value, a
// number by its text.
func idKey(raw []byte) string { return string(transport.KeyOf(raw)) }
