package classify

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxExcerpt bounds Sanitize's output in bytes.
const MaxExcerpt = 256

// Placeholders that replace redacted text. They contain nothing any
// redaction pattern matches, so redaction is idempotent.
const (
	redactedKey   = "[redacted-key]"
	redactedToken = "[redacted-token]"
	redactedJWT   = "[redacted-jwt]"
	redactedEmail = "[redacted-email]"
	redactedID    = "[redacted-id]"
	redactedValue = "[redacted]"
)

var (
	jwtRe    = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}`)
	bearerRe = regexp.MustCompile(`(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{8,}`)
	// API keys: OpenAI (sk-…, sk-proj-…, sk-svcacct-…), Anthropic (sk-ant-…),
	// Google (AIza…), GitHub (ghp_…), AWS access key ids, xAI.
	keyRe = regexp.MustCompile(`sk-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|xai-[A-Za-z0-9]{20,}`)
	// key=value and "key": "value" secrets.
	kvRe    = regexp.MustCompile(`(?i)\b((?:api[_-]?key|access[_-]?token|refresh[_-]?token|id[_-]?token|client[_-]?secret|secret|password|passwd|x-api-key|x-goog-api-key)["']?\s*[:=]\s*["']?)[^\s"',;&\[][^\s"',;&]{5,}`)
	urlRe   = regexp.MustCompile(`(?i)\b(https?|wss?|ftp)://([^\s/?#"'<>]+)([^\s"'<>]*)`)
	emailRe = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)
	homeRe  = regexp.MustCompile(`(?:/home/|/Users/)[^/\s"'<>]+|(?i:\b[a-z]:\\Users\\)[^\\\s"'<>]+|/root\b`)
	// Long opaque ids (account, org, request ids; hashes; UUIDs): 24 or more
	// id characters with at least one digit and one letter.
	idRe = regexp.MustCompile(`[A-Za-z0-9_+=-]{24,}`)
)

// Redact replaces secrets and personal data in s, without bounding or
// otherwise changing it: API keys, bearer tokens, JWTs, key=value secrets,
// URLs (cut to scheme and host), emails, home directories (→ ~) and long
// opaque ids. Runs in time linear in len(s). Use it for transcripts and
// logs; Sanitize for excerpts.
func Redact(s string) string {
	s = jwtRe.ReplaceAllString(s, redactedJWT)
	s = bearerRe.ReplaceAllString(s, "${1}${2}"+redactedToken)
	s = keyRe.ReplaceAllString(s, redactedKey)
	s = kvRe.ReplaceAllString(s, "${1}"+redactedValue)
	s = urlRe.ReplaceAllStringFunc(s, cutURL)
	s = emailRe.ReplaceAllString(s, redactedEmail)
	s = homeRe.ReplaceAllString(s, "~")
	s = idRe.ReplaceAllStringFunc(s, func(m string) string {
		if strings.ContainsAny(m, "0123456789") && strings.IndexFunc(m, isASCIILetter) >= 0 {
			return redactedID
		}
		return m
	})
	return s
}

func isASCIILetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// cutURL keeps a URL's scheme and host (without user info): the path, query
// and fragment may carry keys, ids and names.
func cutURL(u string) string {
	m := urlRe.FindStringSubmatch(u)
	host := m[2]
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	out := strings.ToLower(m[1]) + "://" + host
	if m[3] != "" {
		out += "/…"
	}
	return out
}

// Sanitize makes a bounded, safe excerpt: ANSI escapes removed, control and
// invisible formatting characters turned into spaces, whitespace collapsed,
// secrets redacted (before truncating, so no secret is half-kept), then cut
// on a rune boundary to at most MaxExcerpt bytes of valid UTF-8 ("…" marks a
// cut). Linear in len(s).
func Sanitize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = StripANSI(s)
	s = collapseControls(s)
	s = Redact(s)
	return truncate(s, MaxExcerpt)
}

// collapseControls replaces control and invisible formatting characters
// with spaces and collapses whitespace runs to one space.
func collapseControls(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) || isInvisible(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// isInvisible reports bidi controls, zero-width characters and the BOM,
// which can disguise text.
func isInvisible(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E,
		r >= 0x2060 && r <= 0x2069, r == 0xFEFF, r == 0x00AD:
		return true
	}
	return false
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ") + mark
}

// StripANSI removes ANSI/VT escape sequences: CSI (ESC [ … final, and the
// 8-bit CSI U+009B), OSC/DCS/PM/APC strings (ESC ] … BEL or ESC \) and
// two-byte escapes. Other text, including other control characters, is
// kept. Linear in len(s), also for unterminated sequences.
func StripANSI(s string) string {
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
