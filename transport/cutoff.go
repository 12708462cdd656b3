package transport

import (
	"bytes"
	"regexp"
	"strconv"
	"sync"

	"github.com/acp-guard/acp-guard/internal/jsonscan"
)

// Lines that are not whole frames: the last line of a stream cut off
// without its newline, and lines over the cap that were discarded.

// endsLine reports whether b ends with its line terminator. Only the last
// line of a stream can lack it.
func endsLine(b []byte) bool { return len(b) > 0 && b[len(b)-1] == '\n' }

// lastLine handles the final line of a stream that ended without a
// newline. A complete JSON object is a frame: it is returned with the
// newline added, so the next frame written after it starts on a fresh
// line. Anything else is a fragment (the peer died or was killed
// mid-write): it is never forwarded — half a frame followed by the next
// one on the same line would corrupt both — but counted, logged, recorded
// as a suppressed frame and, from the agent, shown to the hooks as an
// unparseable line. A client fragment whose id can be read gets a parse
// error. A blank remainder is not a frame at all.
func (r *Relay) lastLine(dir Dir, b []byte) ([]byte, bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, false
	}
	if m := ParseMsg(b); m.Kind != KindInvalid {
		return append(b[:len(b):len(b)], '\n'), true
	}
	r.tapIn(dir, b, true)
	r.log.Warn("line cut off at end of input (no newline, not a complete frame); not forwarded", "dir", dir.String(), "bytes", len(b))
	if dir == A2C {
		r.Counts.FragmentsFromAgent++
		m := Msg{Kind: KindInvalid, Line: b}
		r.hooks.AgentMsg(r, &m, nil)
		return nil, false
	}
	r.Counts.FragmentsFromClient++
	if id := oversizeID(Line{head: b}); id != nil {
		r.emit(A2C, ErrorResponse(id, -32700, "acp-guard: the frame ended without a newline at end of input and is not complete JSON; discarded", nil))
	}
	return nil, false
}

var tailIDRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")\s*\}\s*$`) })

// oversizeID finds the id of a discarded line from its head (top-level
// members before the big value) or, failing that, its tail.
func oversizeID(l Line) []byte {
	var id []byte
	_ = jsonscan.Members(trimEOL(l.head), func(key, val []byte) bool {
		if string(key) == "id" {
			id = append([]byte(nil), val...)
			return false
		}
		return true
	})
	if id == nil {
		if m := tailIDRe().FindSubmatch(trimEOL(l.tail)); m != nil {
			id = append([]byte(nil), m[1]...)
		}
	}
	return id
}

func (r *Relay) agentOversize(l Line) {
	r.Counts.OversizeFromAgent++
	id := oversizeID(l)
	r.log.Error("agent line exceeds the line cap; discarded", "dir", "a2c", "bytes", l.oversize, "max", r.cfg.MaxLine, "id", string(id))
	m := Msg{Kind: KindInvalid}
	r.hooks.AgentMsg(r, &m, nil)
	if id == nil || isCall(l) {
		return
	}
	key := KeyOf(id)
	if preq, ok := r.table.proxy[key]; ok {
		// The answer to a request of the proxy's own (a retry): its owner
		// gets the error instead, or it would wait for ever.
		delete(r.table.proxy, key)
		resp := ParseMsg(r.oversizeError(preq.ID, -32603, "the agent's response", l.oversize))
		r.hooks.ProxyResponse(r, &resp, preq)
		return
	}
	req := r.table.client[key]
	if req == nil || req.answered {
		return
	}
	req.answered = true // the discarded line was the agent's answer
	r.Reply(req, r.oversizeError(req.ID, -32603, "the agent's response", l.oversize))
}

// isCall reports whether a discarded line was a request or notification
// (its head names a method): then it answers nothing.
func isCall(l Line) bool {
	call := false
	_ = jsonscan.Members(trimEOL(l.head), func(key, _ []byte) bool {
		call = string(key) == "method"
		return !call
	})
	return call
}

func (r *Relay) clientOversize(l Line) {
	r.Counts.OversizeFromClient++
	id := oversizeID(l)
	r.log.Error("client line exceeds the line cap; discarded", "dir", "c2a", "bytes", l.oversize, "max", r.cfg.MaxLine, "id", string(id))
	if id == nil {
		return
	}
	r.emit(A2C, r.oversizeError(id, -32600, "request", l.oversize))
}

// oversizeError is the error response naming a discarded line.
func (r *Relay) oversizeError(id []byte, code int, what string, size int64) []byte {
	msg := "acp-guard: " + what + " (" + strconv.FormatInt(size, 10) + " bytes) exceeds the line cap (--max-line " +
		strconv.FormatInt(r.cfg.MaxLine, 10) + ") and was discarded"
	data := map[string]any{"acpGuard": map[string]any{"reason": "line_too_long", "bytes": size, "maxLine": r.cfg.MaxLine}}
	return ErrorResponse(id, code, msg, data)
}
