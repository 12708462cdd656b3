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
	kvRe      = regexp.MustCompile(`(?i)\b((?:aws[_-]?secret[_-]?access[_-]?key|secret[_-]?access[_-]?key|api[_-]?key|access[_-]?token|refresh[_-]?token|id[_-]?token|client[_-]?secret|secret|password|passwd|x-api-key|x-goog-api-key)["']?\s*[:=]\s*["']?)[^\s"',;&\[][^\s"',;&]{5,}`)
	winHomeRe = regexp.MustCompile(`(?i:\b[a-z]:\\Users\\)[^\\\s"'<>]+`)
)

// Redact replaces secrets and personal data in s, without bounding or
// otherwise changing it: API keys and tokens, key=value secrets, URLs (cut
// to scheme and host), emails, account ids, home directories (→ ~) and long
// opaque ids. Runs in time linear in len(s). Use it for logs; Sanitize for
// excerpts; RedactFrame for recorded frames.
func Redact(s string) string {
	s = RedactSecrets(s)
	lower := strings.ToLower(s)
	s = redactURLs(s) // before emails: user info in a URL is dropped whole
	s = redactEmails(s)
	s = redactAccountIDs(s)
	s = redactHomes(s)
	if strings.Contains(lower, ":\\users\\") {
		s = winHomeRe.ReplaceAllString(s, "~")
	}
	return redactIDs(s)
}

// RedactFrame is the redaction of a recorded protocol frame: secrets,
// emails and account ids (org-…, acct_…) go, while session ids, paths and
// URLs stay intact so that the recording still replays. Linear time.
func RedactFrame(s string) string {
	return redactAccountIDs(redactEmails(RedactSecrets(s)))
}

// RedactSecrets replaces only credentials in s — API keys and tokens
// (OpenAI, Anthropic, Google, GitHub, Slack, xAI, AWS access key ids and
// secret access keys), bearer tokens, JWTs and key=value secrets — and
// leaves everything else as it is. Linear time.
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
	s = redactAWSSecrets(s)
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

// charset is the set of characters that may follow a keyShape's prefix.
type charset uint8

const (
	alnum      charset = iota // [0-9A-Za-z]
	upperDigit                // [0-9A-Z]
	alnumUnder                // [0-9A-Za-z_]
	alnumDash                 // [0-9A-Za-z_-]
)

func (c charset) has(b byte) bool {
	switch {
	case b >= '0' && b <= '9', b >= 'A' && b <= 'Z':
		return true
	case b >= 'a' && b <= 'z':
		return c != upperDigit
	case b == '_':
		return c == alnumUnder || c == alnumDash
	case b == '-':
		return c == alnumDash
	}
	return false
}

// keyShape is a credential or account id: a literal prefix and a run of
// characters. Each shape is listed once in apiKeyShapes, with true- and
// false-positive vectors in sanitize_test.go.
type keyShape struct {
	prefix string
	min    int // shortest run after the prefix
	chars  charset
	word   bool   // the prefix must start a word (not follow [0-9A-Za-z_-])
	digit  bool   // the run must hold a digit
	repl   string // placeholder; "" is redactedKey
}

var apiKeyShapes = []keyShape{
	{prefix: "sk-", min: 20, chars: alnumDash},  // OpenAI sk-…, sk-proj-…, sk-svcacct-…; Anthropic sk-ant-…
	{prefix: "AIza", min: 20, chars: alnumDash}, // Google
	// GitHub: classic, OAuth, user-to-server, server-to-server and refresh
	// tokens; fine-grained personal access tokens.
	{prefix: "ghp_", min: 20}, {prefix: "gho_", min: 20}, {prefix: "ghu_", min: 20}, {prefix: "ghs_", min: 20}, {prefix: "ghr_", min: 20},
	{prefix: "github_pat_", min: 22, chars: alnumUnder},
	// Slack bot, user, app, refresh, session and config tokens.
	{prefix: "xoxb-", min: 10, chars: alnumDash, word: true}, {prefix: "xoxp-", min: 10, chars: alnumDash, word: true},
	{prefix: "xoxa-", min: 10, chars: alnumDash, word: true}, {prefix: "xoxr-", min: 10, chars: alnumDash, word: true},
	{prefix: "xoxs-", min: 10, chars: alnumDash, word: true}, {prefix: "xoxe-", min: 10, chars: alnumDash, word: true},
	{prefix: "xoxe.xoxp-", min: 10, chars: alnumDash, word: true},
	// AWS access key ids: long-term (AKIA) and temporary (ASIA).
	{prefix: "AKIA", min: 16, chars: upperDigit}, {prefix: "ASIA", min: 16, chars: upperDigit, word: true},
	{prefix: "xai-", min: 20}, // xAI
}

// accountIDShapes are provider account, organization and project ids.
var accountIDShapes = []keyShape{
	{prefix: "org-", min: 8, word: true, digit: true, repl: redactedID},   // OpenAI organization
	{prefix: "acct_", min: 8, word: true, digit: true, repl: redactedID},  // account ids (Stripe-style, providers' billing)
	{prefix: "proj_", min: 8, word: true, digit: true, repl: redactedID},  // OpenAI project
	{prefix: "user-", min: 16, word: true, digit: true, repl: redactedID}, // OpenAI user
}

// redactAccountIDs replaces org-…, acct_… and similar account ids.
func redactAccountIDs(s string) string {
	for _, k := range accountIDShapes {
		s = redactPrefixed(s, k)
	}
	return s
}

// redactPrefixed replaces every prefix+run of k with its placeholder.
func redactPrefixed(s string, k keyShape) string {
	if !strings.Contains(s, k.prefix) {
		return s
	}
	repl := k.repl
	if repl == "" {
		repl = redactedKey
	}
	var b strings.Builder
	last, from := 0, 0
	for {
		i := strings.Index(s[from:], k.prefix)
		if i < 0 {
			break
		}
		i += from
		j, digit := i+len(k.prefix), false
		for j < len(s) && k.chars.has(s[j]) {
			digit = digit || s[j] >= '0' && s[j] <= '9'
			j++
		}
		ok := j-i-len(k.prefix) >= k.min && (digit || !k.digit)
		if ok && k.word && i > 0 && alnumDash.has(s[i-1]) {
			ok = false
		}
		if ok {
			b.WriteString(s[last:i])
			b.WriteString(repl)
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

// awsSecretLen is the length of an AWS secret access key.
const awsSecretLen = 40

func isB64Std(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '+'
}

// redactAWSSecrets replaces AWS secret access keys standing alone: a run of
// exactly 40 base64 characters ([0-9A-Za-z/+], not touching '=', '_', '-'
// or more of them) that mixes upper and lower case and holds a digit. Hex digests (no upper case), words and longer base64 blobs do not
// match. Secret keys written as aws_secret_access_key=… are also caught by
// the key=value rule.
func redactAWSSecrets(s string) string {
	if len(s) < awsSecretLen {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if !isB64Std(s[i]) {
			i++
			continue
		}
		j, upper, lower, digit := i, false, false, false
		for ; j < len(s) && isB64Std(s[j]); j++ {
			c := s[j]
			upper = upper || c >= 'A' && c <= 'Z'
			lower = lower || c >= 'a' && c <= 'z'
			digit = digit || c >= '0' && c <= '9'
		}
		edge := func(k int) bool { return k < 0 || k >= len(s) || (s[k] != '=' && s[k] != '_' && s[k] != '-') }
		if j-i == awsSecretLen && upper && lower && digit && edge(i-1) && edge(j) {
			b.WriteString(s[last:i])
			b.WriteString(redactedKey)
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
