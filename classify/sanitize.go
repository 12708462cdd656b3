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
	kvRe      = lazyRegexp(`(?i)\b((?:aws[_-]?secret[_-]?access[_-]?key|secret[_-]?access[_-]?key|api[_-]?key|access[_-]?token|refresh[_-]?token|id[_-]?token|client[_-]?secret|secret|password|passwd|x-api-key|x-goog-api-key)["']?\s*[:=]\s*["']?)[^\s"',;&\[][^\s"',;&]{5,}`)
	winHomeRe = lazyRegexp(`(?i:\b[a-z]:\\Users\\)[^\\\s"'<>]+`)
)

// Redact replaces secrets and personal data in s, without bounding or
// otherwise changing it: API keys and tokens, key=value secrets, URLs (cut
// to scheme and host), emails, account ids, home directories (→ ~) and long
// opaque ids. Runs in time linear in len(s). Use it for logs; Sanitize for
// excerpts; RedactFrame for recorded frames.
func Redact(s string) string { return personalData.apply(secrets.apply(s)) }

// RedactFrame is the redaction of a recorded protocol frame: secrets,
// emails and account ids (org-…, acct_…) go, while session ids, paths and
// URLs stay intact so that the recording still replays. Linear time.
func RedactFrame(s string) string { return frameData.apply(secrets.apply(s)) }

// RedactSecrets replaces only credentials in s — API keys and tokens
// (OpenAI, Anthropic, Google, GitHub, Slack, xAI, AWS access key ids and
// secret access keys), bearer tokens, JWTs and key=value secrets — and
// leaves everything else as it is. Linear time.
func RedactSecrets(s string) string { return secrets.apply(s) }

// The redactions, in the order they run. Each is a table of redaction
// entries; one driver (redactions.apply) runs them all.
var (
	// secrets are credentials: hand-written scanners find the common
	// shapes in one pass each; the key=value pattern runs only when a
	// literal says it can match.
	secrets = redactions{
		{name: "jwt", maybe: containsLit("eyJ"), next: nextJWT},
		{name: "bearer", maybe: lowerContains("bearer"), next: nextBearer},
	}.with(shapeRedactions(apiKeyShapes)...).with(
		redaction{name: "aws-secret", maybe: func(s string, _ *lowered) bool { return len(s) >= awsSecretLen }, next: nextAWSSecret},
		redaction{name: "key=value", maybe: lowerContains("key", "token", "secret", "passw"), re: kvRe, repl: "${1}" + redactedValue},
	)
	// personalData is what Redact removes besides secrets. URLs go before
	// emails: user info in a URL is dropped whole.
	personalData = redactions{
		{name: "url", maybe: containsLit("://"), next: nextURL},
		{name: "email", maybe: containsLit("@"), next: nextEmail},
	}.with(shapeRedactions(accountIDShapes)...).with(
		redaction{name: "home", maybe: containsLit("/home/", "/Users/", "/root"), next: nextHome},
		redaction{name: "windows-home", maybe: lowerContains(":\\users\\"), re: winHomeRe, repl: "~"},
		redaction{name: "id", next: nextID},
	)
	// frameData is what a recorded frame loses besides secrets: emails and
	// account ids, nothing a replay needs.
	frameData = redactions{{name: "email", maybe: containsLit("@"), next: nextEmail}}.with(shapeRedactions(accountIDShapes)...)
)

// A redaction is one kind of text Redact replaces: maybe, a cheap literal
// test, says whether s can hold it at all; then either next, a scanner,
// finds each occurrence, or re, a regular expression, replaces them all
// (with repl, which may name re's groups).
type redaction struct {
	name  string
	maybe func(s string, lower *lowered) bool // nil: always scan
	// next returns the first occurrence in s that starts at or after from:
	// s[start:end] is replaced by repl. Occurrences never overlap: the next
	// search starts where the last replaced text ended.
	next func(s string, from int) (start, end int, repl string, ok bool)
	re   func() *regexp.Regexp // compiled at first use (lazyRegexp)
	repl string
}

// redactions run in order, each on the output of the one before.
type redactions []redaction

func (rs redactions) with(more ...redaction) redactions {
	return append(rs[:len(rs):len(rs)], more...)
}

// lowered is the lower-case form of the text a run of redactions started
// from, made on first use: the literal tests that ignore case read it.
type lowered struct {
	s, lower string
	done     bool
}

func (l *lowered) get() string {
	if !l.done {
		l.lower, l.done = strings.ToLower(l.s), true
	}
	return l.lower
}

func (rs redactions) apply(s string) string {
	lower := &lowered{s: s}
	for _, r := range rs {
		s = r.apply(s, lower)
	}
	return s
}

// apply is the one scanner loop: copy what lies between occurrences,
// write the replacement for each.
func (r redaction) apply(s string, lower *lowered) string {
	if r.maybe != nil && !r.maybe(s, lower) {
		return s
	}
	if r.re != nil {
		return r.re().ReplaceAllString(s, r.repl)
	}
	var b strings.Builder
	last, replaced := 0, false
	for {
		st, end, repl, ok := r.next(s, last)
		if !ok {
			break
		}
		if !replaced {
			b.Grow(len(s))
			replaced = true
		}
		b.WriteString(s[last:st])
		b.WriteString(repl)
		last = end
	}
	if !replaced {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// containsLit is a maybe test: s holds one of the literals.
func containsLit(lits ...string) func(string, *lowered) bool {
	return func(s string, _ *lowered) bool { return containsAny(s, lits...) }
}

// lowerContains is a maybe test ignoring case: the text the run started
// from holds one of the lower-case literals.
func lowerContains(lits ...string) func(string, *lowered) bool {
	return func(_ string, l *lowered) bool { return containsAny(l.get(), lits...) }
}

func isB64URL(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// nextJWT finds an eyJ….….… token (three base64url segments of at least
// four characters).
func nextJWT(s string, from int) (int, int, string, bool) {
	for {
		i := strings.Index(s[from:], "eyJ")
		if i < 0 {
			return 0, 0, "", false
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
			return i, j, redactedJWT, true
		}
		from = i + 1
	}
}

func isTokenByte(c byte) bool {
	return isB64URL(c) || c == '.' || c == '~' || c == '+' || c == '/' || c == '='
}

// nextBearer finds the credential after "Bearer" (any case) and
// whitespace when it is at least 8 token characters long.
func nextBearer(s string, from int) (int, int, string, bool) {
	for {
		i := indexFold(s, from, "bearer")
		if i < 0 {
			return 0, 0, "", false
		}
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
		e := j
		for e < len(s) && isTokenByte(s[e]) {
			e++
		}
		if e-j < 8 {
			continue
		}
		return j, e, redactedToken, true
	}
}

// indexFold returns the first index at or after from where s holds word,
// a lower-case ASCII word, in any ASCII case; -1 if none.
func indexFold(s string, from int, word string) int {
	for i := from; i+len(word) <= len(s); i++ {
		j := 0
		for j < len(word) && s[i+j]|0x20 == word[j] {
			j++
		}
		if j == len(word) {
			return i
		}
	}
	return -1
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

// shapeRedactions makes one redaction of each shape.
func shapeRedactions(shapes []keyShape) []redaction {
	out := make([]redaction, len(shapes))
	for i, k := range shapes {
		out[i] = redaction{name: k.prefix, maybe: containsLit(k.prefix), next: k.next}
	}
	return out
}

// next finds the shape's prefix followed by its run.
func (k keyShape) next(s string, from int) (int, int, string, bool) {
	repl := k.repl
	if repl == "" {
		repl = redactedKey
	}
	for {
		i := strings.Index(s[from:], k.prefix)
		if i < 0 {
			return 0, 0, "", false
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
			return i, j, repl, true
		}
		from = max(j, i+1)
	}
}

// awsSecretLen is the length of an AWS secret access key.
const awsSecretLen = 40

func isB64Std(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '+'
}

// nextAWSSecret finds an AWS secret access key standing alone: a run of
// exactly 40 base64 characters ([0-9A-Za-z/+], not touching '=', '_', '-'
// or more of them) that mixes upper and lower case and holds a digit. Hex
// digests (no upper case), words and longer base64 blobs do not match.
// Secret keys written as aws_secret_access_key=… are also caught by the
// key=value rule.
func nextAWSSecret(s string, i int) (int, int, string, bool) {
	edge := func(k int) bool { return k < 0 || k >= len(s) || (s[k] != '=' && s[k] != '_' && s[k] != '-') }
	for i < len(s) {
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
		if j-i == awsSecretLen && upper && lower && digit && edge(i-1) && edge(j) {
			return i, j, redactedKey, true
		}
		i = j
	}
	return 0, 0, "", false
}

func isURLEnd(c byte) bool {
	return c <= ' ' || c == '"' || c == '\'' || c == '<' || c == '>' || c == 0x7f
}

// nextURL finds an http(s), ws(s) or ftp URL and cuts it to scheme and
// host: paths, queries and fragments carry keys, ids and names. User info
// is dropped.
func nextURL(s string, from int) (int, int, string, bool) {
	for {
		i := strings.Index(s[from:], "://")
		if i < 0 {
			return 0, 0, "", false
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
		repl := scheme + "://" + host
		if end > h {
			repl += "/…"
		}
		return st, end, repl, true
	}
}

func isEmailLocal(c byte) bool {
	return isIDByte(c) && c != '=' || c == '.' || c == '%'
}

func isDomainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.'
}

// nextEmail finds a local@domain.tld address whose local part starts at
// or after from.
func nextEmail(s string, from int) (int, int, string, bool) {
	for next := from; ; {
		k := strings.IndexByte(s[next:], '@')
		if k < 0 {
			return 0, 0, "", false
		}
		i := next + k
		st := i
		for st > from && isEmailLocal(s[st-1]) {
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
		if st < i && hasTLD(s[i+1:end]) {
			return st, end, redactedEmail, true
		}
		next = i + 1
	}
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

// nextHome finds /home/<user>, /Users/<user> or /root, replaced by ~.
func nextHome(s string, from int) (int, int, string, bool) {
	for i := from; i < len(s); i++ {
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
		return i, i + end, "~", true
	}
	return 0, 0, "", false
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

// nextID finds a long opaque id (account, org and request ids, hashes,
// UUIDs): a run of at least minIDLen id characters holding a digit and a
// letter.
func nextID(s string, i int) (int, int, string, bool) {
	for i < len(s) {
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
			return i, j, redactedID, true
		}
		i = j
	}
	return 0, 0, "", false
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
