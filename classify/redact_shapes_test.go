package classify

import (
	"regexp"
	"strings"
	"testing"
)

// Every credential and account-id shape, with true- and false-positive
// vectors. secret is the text that must not survive; "" means the input
// must come back unchanged from every redactor.
func TestRedactionShapes(t *testing.T) {
	for _, tt := range []struct {
		name, in, secret string
		inFrames         bool // RedactFrame (transcripts) must remove it too
	}{
		// GitHub
		{"github classic", "token ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 rejected", "ghp_AbCdEf", true},
		{"github oauth", "gho_16C7e42F292c6912E7710c838347Ae178B4a", "gho_16C7e42F", true},
		{"github server", "ghs_16C7e42F292c6912E7710c838347Ae178B4a", "ghs_16C7e42F", true},
		{"github fine-grained", "GITHUB_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVW", "github_pat_11ABC", true},
		{"github prefix in prose", "the ghp_ prefix marks classic tokens", "", false},
		{"github_pat short", "see github_pat_docs", "", false},
		// Slack
		{"slack bot", "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy", "pdFZKVeTuE8sk7oOcBrzbqgy", true},
		{"slack user", "auth xoxp-4956821238-4956821238-AbCdEf123456", "xoxp-4956821238", true},
		{"slack refresh", "xoxe-1-My0xLTI0NTU5NDk2NzkyMS0x", "xoxe-1-My0x", true},
		{"slack rotated", "xoxe.xoxp-1-Mi0yLTQ1NTU5NDk2NzkyMS0x", "Mi0yLTQ1", true},
		{"slack word", "the xoxb- prefix, or boxoxb-1234567890123", "", false},
		// AWS
		{"aws access key id", "AccessKeyId AKIAIOSFODNN7EXAMPLE is invalid", "AKIAIOSFODNN7EXAMPLE", true},
		{"aws temporary key id", "ASIAY34FZKBOKMUTVV7A expired", "ASIAY34FZKBOKMUTVV7A", true},
		{"aws secret alone", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY was rejected", "wJalrXUtnFEMI", true},
		{"aws secret in json", `{"SecretAccessKey":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}`, "wJalrXUtnFEMI", true},
		{"aws secret kv", "aws_secret_access_key = abcdefghij", "abcdefghij", true},
		{"aws secret env", "AWS_SECRET_ACCESS_KEY=Zm9vYmFyYmF6cXV4", "Zm9vYmFyYmF6cXV4", true},
		{"asia in prose", "ASIA is a continent", "", false},
		{"git sha (hex, no upper case)", "commit 0123456789abcdef0123456789abcdef01234567", "", false},
		{"longer base64 blob", "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "", false},
		{"40 letters, no digits", "ThisIsAFortyCharacterIdentifierWithNoDig", "", false},
		// Account ids
		{"openai org", "organization org-AbCdEf1234567890GhIjKlMn has no quota", "org-AbCdEf", true},
		{"account", "billing account acct_1032D82eZvKYlo2C suspended", "acct_1032D82e", true},
		{"project", "project proj_AbC123dEf456 over budget", "proj_AbC123", true},
		{"org-mode", "edit notes in org-mode with org-capture-2", "", false},
		{"org inside a word", "cyborg-1234567890 and myacct_1234567890", "", false},
		// Emails
		{"email", "contact ops.team+ai@example.co.uk now", "ops.team+ai@example.co.uk", true},
		{"not an email", "decorator @example.property and a@b", "", false},
	} {
		for _, r := range []struct {
			name string
			f    func(string) string
			must bool
		}{
			{"Redact", Redact, true},
			{"Sanitize", Sanitize, true},
			{"RedactFrame", RedactFrame, tt.inFrames},
		} {
			got := r.f(tt.in)
			if tt.secret == "" {
				// Redact's older long-id rule is broad on purpose (hashes,
				// blobs); the new shapes must not add false positives.
				if r.name == "RedactFrame" && got != tt.in {
					t.Errorf("%s: %s(%q) = %q, want it unchanged", tt.name, r.name, tt.in, got)
				}
				continue
			}
			if r.must && strings.Contains(got, tt.secret) {
				t.Errorf("%s: %s(%q) = %q, %q survived", tt.name, r.name, tt.in, got, tt.secret)
			}
		}
	}
}

// Recorded frames keep what replay needs: session ids, paths, URLs.
func TestRedactFrameKeepsReplayData(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"0199a1b2-c3d4-7e5f-8a9b-0123456789ab","cwd":"/home/alice/p","text":"see https://example.com/x?y=1 from bob@example.com org-AbCdEf1234567890 ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"}}`
	got := RedactFrame(in)
	for _, keep := range []string{"0199a1b2-c3d4-7e5f-8a9b-0123456789ab", "/home/alice/p", "https://example.com/x?y=1", `"id":3`} {
		if !strings.Contains(got, keep) {
			t.Errorf("RedactFrame dropped %q: %s", keep, got)
		}
	}
	for _, gone := range []string{"bob@example.com", "org-AbCdEf", "ghp_AbCd"} {
		if strings.Contains(got, gone) {
			t.Errorf("RedactFrame kept %q: %s", gone, got)
		}
	}
}

// More secret shapes the fuzzer checks in Sanitize's output (each one as
// the never-survive part of its rule).
var moreSecretRes = []*regexp.Regexp{
	regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{20,}`),
	regexp.MustCompile(`github_pat_[A-Za-z0-9_]{22,}`),
	regexp.MustCompile(`AKIA[0-9A-Z]{16,}`),
	regexp.MustCompile(`(?:^|[^0-9A-Za-z_-])(?:ASIA[0-9A-Z]{16}|xox[bparse]-[0-9A-Za-z_-]{10})`),
}

var accountRe = regexp.MustCompile(`(?:^|[^0-9A-Za-z_-])(?:org-|acct_|proj_)([0-9A-Za-z]+)`)

var b64Run = regexp.MustCompile(`[A-Za-z0-9/+]+`)

// surviving returns the first secret or account id in s, checked
// independently of the redactors' own scanners.
func surviving(s string) string {
	for _, m := range accountRe.FindAllStringSubmatch(s, -1) {
		if len(m[1]) >= 8 && strings.ContainsAny(m[1], "0123456789") {
			return m[0]
		}
	}
	return survivingSecret(s)
}

// survivingSecret returns the first credential in s.
func survivingSecret(s string) string {
	for _, re := range moreSecretRes {
		if m := re.FindString(s); m != "" {
			return m
		}
	}
	for _, loc := range b64Run.FindAllStringIndex(s, -1) {
		i, j := loc[0], loc[1]
		run := s[i:j]
		edge := func(k int) bool { return k < 0 || k >= len(s) || !strings.ContainsRune("=_-", rune(s[k])) }
		digits := len(run) - len(strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return -1
			}
			return r
		}, run))
		if len(run) == 40 && strings.ToLower(run) != run && strings.ToUpper(run) != run && digits >= 1 && edge(i-1) && edge(j) {
			return run
		}
	}
	return ""
}
