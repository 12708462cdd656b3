package transport

import (
	"strings"
	"unicode/utf8"

	"github.com/acp-guard/acp-guard/internal/ansi"
)

const maxRingLine = 1024

// ring keeps the last n stderr lines, each bounded.
type ring struct {
	buf  []string
	next int
	full bool
}

func newRing(n int) *ring { return &ring{buf: make([]string, n)} }

func (r *ring) add(s string) {
	if len(s) > maxRingLine {
		s = s[:maxRingLine]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

func (r *ring) lines() []string {
	if !r.full {
		return append([]string(nil), r.buf[:r.next]...)
	}
	out := make([]string, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

// StripANSI removes terminal escape sequences (ansi.Strip, shared with the
// classifier) and trailing carriage returns.
func StripANSI(s string) string {
	return strings.TrimRight(ansi.Strip(s), "\r")
}
