package classify

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/acp-guard/acp-guard/internal/ansi"
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
	// key=value and "key": "value" secrets.
	kvRe      = regexp.MustCompile(`(?i)\b((?:api[_-]?key|access[_-]?token|refresh[_-]?token|id[_-]?token|client[_-]?secret|secret|password|passwd|x-api-key|x-goog-api-key)["']?\s*[:=]\s*["']?)[^\s"',;&\[][^\s"',;&]{5,}`)
	winHomeRe = regexp.MustCompile(`(?i:\b[a-z]:\\Users\\)[^\\\s"'<>]+`)
)

// Redact replaces secrets and personal data in s, without bounding or
// otherwise changing it: API keys, bearer tokens, JWTs, key=value secrets,
// URLs (cut to scheme and host), emails, home directories (→ ~) and long
// opaque ids. Runs in time linear in len(s). Use it for transcripts and
// logs; Sanitize for excerpts.
func Redact(s string) string {
	s = RedactSecrets(s)
	lower := strings.ToLower(s)
	s = redactURLs(s)
	s = redactEmails(s)
	s = redactHomes(s)
	if strings.Contains(lower, ":\\users\\") {
		s = winHomeRe.ReplaceAllString(s, "~")
	}
	return redactIDs(s)
}

// RedactSecrets replaces only credentials in s — API keys, bearer tokens,
// JWTs and key=value secrets — and leaves everything else as it is: what a
// recorded transcript needs, where ids, paths and URLs must stay intact
// for the recording to replay. Linear time.
func RedactSecrets(s string) string {
	// Hand-written scanners find the common shapes in one pass each; the
	// remaining patterns run only when a literal says they can match.
	lower := strings.ToLower(s)
	s = redactJWTs(s)
	if strings.Contains(lower, "bearer") {
		s = redactBearer(s)
	}
	for _, k := range apiKeyShapes {
		s = redactPrefixed(s, k)
	}
	if containsAny(lower, "key", "token", "secret", "passw") {
		s = kvRe.ReplaceAllString(s, "${1}"+redactedValue)
	}
	return s
}

func isB64URL(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// redactJWTs replaces eyJ….….… tokens (three base64url segments of at
// least four characters).
func redactJWTs(s string) string {
	if !strings.Contains(s, "eyJ") {
		return s
	}
	var b strings.Builder
	last, from := 0, 0
	for {
		i := strings.Index(s[from:], "eyJ")
		if i < 0 {
			break
		}
		i += from
		j, ok := i+3, true
		for seg := 0; seg < 3 && ok; seg++ {
			st := j
			for j < len(s) && isB64URL(s[j]) {
				j++
			}
			ok = j-st >= 4
			if seg < 2 {
				if ok && j < len(s) && s[j] == '.' {
					j++
				} else {
					ok = false
				}
			}
		}
		if ok {
			b.WriteString(s[last:i])
			b.WriteString(redactedJWT)
			last, from = j, j
			continue
		}
		from = i + 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isTokenByte(c byte) bool {
	return isB64URL(c) || c == '.' || c == '~' || c == '+' || c == '/' || c == '='
}

// redactBearer replaces the credential after "Bearer" (any case) and
// whitespace when it is at least 8 token characters long.
func redactBearer(s string) string {
	lower := asciiLower(s) // byte offsets must match s
	var b strings.Builder
	last, from := 0, 0
	for {
		i := strings.Index(lower[from:], "bearer")
		if i < 0 {
			break
		}
		i += from
		from = i + 6
		if i > 0 && isIDByte(s[i-1]) {
			continue
		}
		j := i + 6
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if j == i+6 {
			continue
		}
		k := j
		for k < len(s) && isTokenByte(s[k]) {
			k++
		}
		if k-j < 8 {
			continue
		}
		b.WriteString(s[last:j])
		b.WriteString(redactedToken)
		last, from = k, k
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// keyShape is an API key: a literal prefix and a run of key characters.
type keyShape struct {
	prefix string
	min    int  // shortest run after the prefix
	upper  bool // run of [0-9A-Z] only
	dash   bool // run may hold '_' and '-'
}

var apiKeyShapes = []keyShape{
	{prefix: "sk-", min: 20, dash: true},                                                                                                  // OpenAI sk-…, sk-proj-…, sk-svcacct-…; Anthropic sk-ant-…
	{prefix: "AIza", min: 20, dash: true},                                                                                                 // Google
	{prefix: "ghp_", min: 20}, {prefix: "gho_", min: 20}, {prefix: "ghu_", min: 20}, {prefix: "ghs_", min: 20}, {prefix: "ghr_", min: 20}, // GitHub
	{prefix: "AKIA", min: 16, upper: true}, // AWS access key id
	{prefix: "xai-", min: 20},              // xAI
}

func (k keyShape) ok(c byte) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'A' && c <= 'Z':
		return true
	case c >= 'a' && c <= 'z':
		return !k.upper
	case c == '_' || c == '-':
		return k.dash
	}
	return false
}

// redactPrefixed replaces every prefix+run of k with the key placeholder.
func redactPrefixed(s string, k keyShape) string {
	if !strings.Contains(s, k.prefix) {
		return s
	}
	var b strings.Builder
	last, from := 0, 0
	for {
		i := strings.Index(s[from:], k.prefix)
		if i < 0 {
			break
		}
		i += from
		j := i + len(k.prefix)
		for j < len(s) && k.ok(s[j]) {
			j++
		}
		if j-i-len(k.prefix) >= k.min {
			b.WriteString(s[last:i])
			b.WriteString(redactedKey)
			last = j
		}
		from = max(j, i+1)
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isURLEnd(c byte) bool {
	return c <= ' ' || c == '"' || c == '\'' || c == '<' || c == '>' || c == 0x7f
}

// redactURLs cuts http(s), ws(s) and ftp URLs to scheme and host: paths,
// queries and fragments carry keys, ids and names. User info is dropped.
func redactURLs(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	last, from := 0, 0
	for {
		i := strings.Index(s[from:], "://")
		if i < 0 {
			break
		}
		i += from
		st := i
		for st > 0 && isASCIILetter(rune(s[st-1])) {
			st--
		}
		scheme := strings.ToLower(s[st:i])
		switch scheme {
		case "http", "https", "ws", "wss", "ftp":
		default:
			from = i + 3
			continue
		}
		if st > 0 && (isIDByte(s[st-1]) || s[st-1] == '.') {
			from = i + 3 // "xhttp://" is not a URL start
			continue
		}
		h := i + 3
		for h < len(s) && !isURLEnd(s[h]) && s[h] != '/' && s[h] != '?' && s[h] != '#' {
			h++
		}
		host := s[i+3 : h]
		if k := strings.LastIndexByte(host, '@'); k >= 0 {
			host = host[k+1:]
		}
		end := h
		for end < len(s) && !isURLEnd(s[end]) {
			end++
		}
		if host == "" && end == h {
			from = i + 3
			continue
		}
		b.WriteString(s[last:st])
		b.WriteString(scheme)
		b.WriteString("://")
		b.WriteString(host)
		if end > h {
			b.WriteString("/…")
		}
		last, from = end, end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isEmailLocal(c byte) bool {
	return isIDByte(c) && c != '=' || c == '.' || c == '%'
}

func isDomainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.'
}

// redactEmails replaces local@domain.tld addresses.
func redactEmails(s string) string {
	if strings.IndexByte(s, '@') < 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for i := strings.IndexByte(s, '@'); i >= 0; {
		st := i
		for st > last && isEmailLocal(s[st-1]) {
			st--
		}
		end := i + 1
		for end < len(s) && isDomainByte(s[end]) {
			end++
		}
		// Trim trailing dots, then require a dot and a TLD of 2+ letters.
		for end > i+1 && s[end-1] == '.' {
			end--
		}
		ok := st < i && hasTLD(s[i+1:end])
		next := i + 1
		if ok {
			b.WriteString(s[last:st])
			b.WriteString(redactedEmail)
			last, next = end, end
		}
		k := strings.IndexByte(s[next:], '@')
		if k < 0 {
			break
		}
		i = next + k
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// hasTLD reports whether a domain has a dot followed by two letters.
func hasTLD(dom string) bool {
	for k := 0; k+2 < len(dom); k++ {
		if dom[k] == '.' && k > 0 && isASCIILetter(rune(dom[k+1])) && isASCIILetter(rune(dom[k+2])) {
			return true
		}
	}
	return false
}

// redactHomes replaces /home/<user>, /Users/<user> and /root with ~.
func redactHomes(s string) string {
	if !containsAny(s, "/home/", "/Users/", "/root") {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '/' {
			continue
		}
		rest := s[i:]
		var end int
		switch {
		case strings.HasPrefix(rest, "/home/") || strings.HasPrefix(rest, "/Users/"):
			p := strings.IndexByte(rest[1:], '/') + 2
			end = p
			for end < len(rest) && !isURLEnd(rest[end]) && rest[end] != '/' {
				end++
			}
			if end == p {
				continue
			}
		case strings.HasPrefix(rest, "/root") && (len(rest) == 5 || !isIDByte(rest[5])):
			end = 5
		default:
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString("~")
		last = i + end
		i = last - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// minIDLen is the shortest run of id characters treated as an opaque id.
const minIDLen = 24

func isIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '+' || c == '=' || c == '-'
}

// redactIDs replaces long opaque ids (account, org and request ids, hashes,
// UUIDs): runs of at least minIDLen id characters holding a digit and a
// letter. One pass, no regular expression.
func redactIDs(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if !isIDByte(s[i]) {
			i++
			continue
		}
		j, digit, letter := i, false, false
		for ; j < len(s) && isIDByte(s[j]); j++ {
			c := s[j]
			digit = digit || c >= '0' && c <= '9'
			letter = letter || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		}
		if j-i >= minIDLen && digit && letter {
			if b.Len() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:i])
			b.WriteString(redactedID)
			last = j
		}
		i = j
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isASCIILetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

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

// StripANSI removes ANSI/VT escape sequences (see ansi.Strip).
func StripANSI(s string) string { return ansi.Strip(s) }
