// Package ansi removes terminal escape sequences from text: the one
// implementation shared by the relay (agent stderr lines) and the
// classifier (sanitized excerpts).
package ansi

import "strings"

// Strip removes ANSI/VT escape sequences: CSI (ESC [ … final, and the
// 8-bit CSI U+009B), OSC/DCS/PM/APC strings (ESC ] … BEL or ESC \) and
// two-byte escapes. Other text, including other control characters, is
// kept. Linear in len(s), also for unterminated sequences.
func Strip(s string) string {
	if strings.IndexByte(s, 0x1b) < 0 && !strings.Contains(s, "\u009b") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	stAt := -2 // index of the next string terminator at or after i; -1: none left
	nextST := func(i int) int {
		if stAt == -1 || (stAt >= i) {
			return stAt
		}
		stAt = -1
		for j := i; j < len(s); j++ {
			if s[j] == 0x07 || (s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\') {
				stAt = j
				break
			}
		}
		return stAt
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0xc2 && i+1 < len(s) && s[i+1] == 0x9b { // U+009B CSI
			i = skipCSI(s, i+2)
			continue
		}
		if c != 0x1b {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			i++
			continue
		}
		switch n := s[i+1]; {
		case n == '[':
			i = skipCSI(s, i+2)
		case n == ']' || n == 'P' || n == 'X' || n == '^' || n == '_':
			end := nextST(i + 2)
			if end < 0 {
				i += 2 // unterminated: drop the introducer only
				continue
			}
			if s[end] == 0x07 {
				i = end + 1
			} else {
				i = end + 2
			}
		case n == '(' || n == ')' || n == '*' || n == '+' || n == '#' || n == '%':
			// Charset designation: ESC ( B.
			if i+2 < len(s) && s[i+2] < 0x80 {
				i += 3
			} else {
				i += 2
			}
		case n < 0x80:
			i += 2
		default:
			i++ // a lone ESC before non-ASCII text: keep the text intact
		}
	}
	return b.String()
}

// skipCSI skips CSI parameter, intermediate and final bytes from i.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x30 && s[i] <= 0x3f {
		i++
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}
