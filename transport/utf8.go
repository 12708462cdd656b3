package transport

import "unicode/utf8"

// validFrame returns a frame of acp-guard's own as valid UTF-8: every byte
// that is not part of a valid UTF-8 sequence becomes U+FFFD, as
// encoding/json does for the strings it encodes. Such bytes come from a
// peer's text the frame carries (an agent's error message kept in an
// annotated error, a result acp-guard marked): JSON that is not UTF-8 is
// not JSON (RFC 8259), and a client may reject the whole frame. The id
// span is left as it came — it is the requester's own, and it must match
// its request. A valid frame is returned as it is, uncopied.
func validFrame(line []byte) []byte {
	if utf8.Valid(line) {
		return line
	}
	m := ParseMsg(line)
	if m.ID != nil {
		i := cap(line) - cap(m.ID)
		if i >= 0 && i+len(m.ID) <= len(line) {
			out := appendValid(make([]byte, 0, len(line)+16), line[:i])
			out = append(out, m.ID...)
			return appendValid(out, line[i+len(m.ID):])
		}
	}
	return appendValid(make([]byte, 0, len(line)+16), line)
}

// appendValid appends b to out with each invalid byte replaced by U+FFFD.
func appendValid(out, b []byte) []byte {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}
