package transport

import (
	"bytes"
	"testing"
)

// hasNotificationPrefix agrees with bytes.HasPrefix on the prefix itself,
// on lines that differ from it in any one byte (first, middle, in the
// words' overlap, last), and on lines too short to hold it.
func TestHasNotificationPrefix(t *testing.T) {
	p := []byte(notificationPrefix)
	lines := [][]byte{nil, []byte("{"), p[:len(p)-1], p, append(append([]byte{}, p...), `session/update","params":{}}`...)}
	for i := range p {
		b := append(append([]byte{}, p...), "x\"}"...)
		b[i] ^= 0x20
		lines = append(lines, b)
	}
	for _, b := range lines {
		if got, want := hasNotificationPrefix(b), bytes.HasPrefix(b, p); got != want {
			t.Errorf("%q: got %v, want %v", b, got, want)
		}
	}
}

// trimEOL takes off one "\n", then one "\r", nothing else.
func TestTrimEOL(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "{}": "{}", "{}\n": "{}", "{}\r\n": "{}", "{}\r": "{}", "{}\n\n": "{}\n", "{}\r\r\n": "{}\r", "\n": "", "\r\n": "",
	} {
		if got := string(trimEOL([]byte(in))); got != want {
			t.Errorf("trimEOL(%q) = %q, want %q", in, got, want)
		}
	}
}
