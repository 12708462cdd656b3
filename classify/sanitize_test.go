package classify

import (
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSanitize(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"openai key", "Incorrect API key provided: sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234.", "Incorrect API key provided: [redacted-key]."},
		{"openai legacy key", "key sk-AbCdEfGhIjKlMnOpQrStUvWx here", "key [redacted-key] here"},
		{"anthropic key", "x-api-key: sk-ant-api03-AbCdEfGhIjKlMnOpQrSt_uvwxyz-0123", "x-api-key: [redacted-key]"},
		{"anthropic key in prose", "using sk-ant-api03-AbCdEfGhIjKlMnOpQrSt_uvwxyz-0123 now", "using [redacted-key] now"},
		{"google key", "key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUv", "key=[redacted-key]"},
		{"bearer", "Authorization: Bearer abc.def-ghi_jkl", "Authorization: Bearer [redacted-token]"},
		{"jwt", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "token [redacted-jwt]"},
		{"email", "account alice.smith+ai@example.co.uk is over quota", "account [redacted-email] is over quota"},
		{"url cut to host", "see https://api.example.com/v1/x?key=secret#frag now", "see https://api.example.com/… now"},
		{"url userinfo dropped", "proxy http://bob:hunter2@proxy.local:8080/path", "proxy http://proxy.local:8080/…"},
		{"url bare host kept", "https://ai.google.dev", "https://ai.google.dev"},
		{"home linux", "open /home/alice/src/app/main.go: permission denied", "open ~/src/app/main.go: permission denied"},
		{"home mac", "/Users/bob/.codex/config.toml", "~/.codex/config.toml"},
		{"root", "/root/.gemini/settings.json", "~/.gemini/settings.json"},
		{"windows home", `C:\Users\carol\AppData\x`, `~\AppData\x`},
		{"request id", "request_id: req_011CUxYzAbCdEfGhIjKlMnOp failed", "request_id: [redacted-id] failed"},
		{"uuid", "session 123e4567-e89b-12d3-a456-426614174000 lost", "session [redacted-id] lost"},
		{"hex", "trace 0123456789abcdef0123456789abcdef", "trace [redacted-id]"},
		{"long word kept", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"},
		{"ansi", "\x1b[31mError:\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07 done", "Error: link done"},
		{"controls", "a\x00b\tc\r\nd\u202ee\u200bf", "a b c d e f"},
		{"ansi cannot hide a key", "sk-AbCdEfGhIjK\x1b[0mLmNoPqRsTuVwXyz", "[redacted-key]"},
		{"invalid utf8", "ok\xffok", "ok\uFFFDok"},
		{"trim", "   spaced   out   ", "spaced out"},
	} {
		if got := Sanitize(tt.in); got != tt.want {
			t.Errorf("%s: Sanitize(%q): got %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestSanitizeTruncatesAfterRedacting(t *testing.T) {
	key := "sk-proj-" + strings.Repeat("A1", 20)
	in := strings.Repeat("é", 120) + " " + key + " " + strings.Repeat("x", 300)
	got := Sanitize(in)
	if len(got) > MaxExcerpt {
		t.Fatalf("got %d bytes, want <= %d", len(got), MaxExcerpt)
	}
	if !utf8.ValidString(got) {
		t.Fatalf("got invalid UTF-8 %q", got)
	}
	if strings.Contains(got, "sk-proj") || strings.Contains(got, "A1A1") {
		t.Fatalf("got %q, a part of the key survived", got)
	}
	if !strings.HasSuffix(got, "…") {
		t.Errorf("got %q, want a cut mark", got)
	}
}

func TestRedactKeepsLayout(t *testing.T) {
	in := "line1 sk-AbCdEfGhIjKlMnOpQrStUvWx\n\tline2 /home/alice/x\n"
	want := "line1 [redacted-key]\n\tline2 ~/x\n"
	if got := Redact(in); got != want {
		t.Errorf("Redact: got %q, want %q", got, want)
	}
}

func TestStripANSI(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain", "plain"},
		{"\x1b[1;31mred\x1b[m", "red"},
		{"\x1b[?25lhidden\x1b[?25h", "hidden"},
		{"\x1b]0;title\x1b\\text", "text"},
		{"\x1b]unterminated text", "unterminated text"},
		{"\x1b(Bcharset", "charset"},
		{"\u009b31mc1\u009b0m", "c1"},
		{"trailing\x1b", "trailing"},
		{"\x1bé", "é"},
		{"a\x00b", "a\x00b"}, // other controls are Sanitize's business
	} {
		if got := StripANSI(tt.in); got != tt.want {
			t.Errorf("StripANSI(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// secretRes are the secret shapes that must never survive Sanitize.
var secretRes = []*regexp.Regexp{
	regexp.MustCompile(`sk-[A-Za-z0-9_-]{20,}`),
	regexp.MustCompile(`AIza[0-9A-Za-z_-]{20,}`),
	regexp.MustCompile(`eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}`),
	regexp.MustCompile(`(?i)bearer\s+[A-Za-z0-9._~+/=-]{8,}`),
	regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+\.[A-Za-z]{2,}`),
	regexp.MustCompile(`/home/[^/\s"'<>]+/`), // a user name has no quotes or angle brackets (redactHomes stops there)
}

func checkSanitized(t *testing.T, in, got string) {
	t.Helper()
	if len(got) > MaxExcerpt {
		t.Fatalf("Sanitize(%q): %d bytes, want <= %d", in, len(got), MaxExcerpt)
	}
	if !utf8.ValidString(got) {
		t.Fatalf("Sanitize(%q) = %q: invalid UTF-8", in, got)
	}
	for _, r := range got {
		if unicode.IsControl(r) || isInvisible(r) {
			t.Fatalf("Sanitize(%q) = %q: control character %U", in, got, r)
		}
	}
	for _, re := range secretRes {
		if loc := re.FindString(got); loc != "" && !strings.Contains(loc, "[redacted") {
			t.Fatalf("Sanitize(%q) = %q: %q survived", in, got, loc)
		}
	}
	if m := surviving(got); m != "" && !strings.HasSuffix(got, "…") {
		t.Fatalf("Sanitize(%q) = %q: %q survived", in, got, m)
	}
	if again := Sanitize(got); again != got {
		t.Fatalf("Sanitize not idempotent: %q -> %q -> %q", in, got, again)
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"", "plain", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234", "Bearer abcdefghijkl",
		"https://user:pw@h.example/x?key=1", "alice@example.com", "/home/alice/x",
		"\x1b[31mred\x1b]0;t\x07", "req_011CUxYzAbCdEfGhIjKlMnOp", "é\xff\u202e",
		`API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		"Error: RetriableError: [unavailable] PING timed out",
		"ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
		"xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy", "AKIAIOSFODNN7EXAMPLE ASIAY34FZKBOKMUTVV7A",
		"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "org-AbCdEf1234567890 acct_1032D82eZvKYlo2C",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		checkSanitized(t, in, Sanitize(in))
		if m := survivingSecret(RedactSecrets(in)); m != "" {
			t.Fatalf("RedactSecrets(%q): %q survived", in, m)
		}
		if fr := RedactFrame(in); surviving(fr) != "" || secretRes[4].MatchString(fr) {
			t.Fatalf("RedactFrame(%q) = %q: a secret, account id or email survived", in, fr)
		}
		r := Redact(in)
		for _, re := range secretRes[:3] {
			if loc := re.FindString(r); loc != "" {
				t.Fatalf("Redact(%q) = %q: %q survived", in, r, loc)
			}
		}
	})
}

// adversarial builds n bytes of text designed to stress the sanitizer:
// unterminated escapes, near-miss keys, long id runs, many '@' and "://".
func adversarial(n int) string {
	parts := []string{"\x1b]", "sk-", "AIza", "eyJ", "a@b", "https://", "/home/", "Bearer ", strings.Repeat("a1", 20), "\x1b[", "{\"", "\xff"}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(parts[i%len(parts)])
		b.WriteString(strings.Repeat("x", i%7))
	}
	return b.String()[:n]
}

func TestSanitizeAdversarial(t *testing.T) {
	in := adversarial(1 << 16)
	checkSanitized(t, in, Sanitize(in))
}

func BenchmarkSanitize1MiBAdversarial(b *testing.B) {
	in := adversarial(1 << 20)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		Sanitize(in)
	}
}

func BenchmarkSanitizeTypical(b *testing.B) {
	in := `API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CUxYzAbCdEfGhIjKlMnOp"} at https://api.anthropic.com/v1/messages`
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		Sanitize(in)
	}
}

func TestRedactSecretsKeepsTheRest(t *testing.T) {
	in := `{"cwd":"/home/alice/p","sessionId":"0123456789abcdef0123456789abcdef","text":"see https://example.com/x?y=1, mail bob@example.com, key sk-proj-abcdefghijklmnopqrstuvwxyz123456, Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123"}`
	got := RedactSecrets(in)
	for _, keep := range []string{"/home/alice/p", "0123456789abcdef0123456789abcdef", "https://example.com/x?y=1", "bob@example.com"} {
		if !strings.Contains(got, keep) {
			t.Errorf("RedactSecrets dropped %q: %s", keep, got)
		}
	}
	for _, secret := range []string{"sk-proj-abcdefghijklmnopqrstuvwxyz123456", "abcdefghijklmnopqrstuvwxyz0123"} {
		if strings.Contains(got, secret) {
			t.Errorf("RedactSecrets kept %q: %s", secret, got)
		}
	}
	if full := Redact(in); strings.Contains(full, "bob@example.com") || strings.Contains(full, "/home/alice") {
		t.Errorf("Redact kept personal data: %s", full)
	}
}
