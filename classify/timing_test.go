package classify

import (
	"encoding/json"
	"testing"
	"time"
)

var pinned = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		in        string
		wantD     time.Duration
		wantReset string
	}{
		{"20", 20 * time.Second, ""},
		{" 120 ", 2 * time.Minute, ""},
		{"0", 0, ""},
		{"-5", 0, ""},
		{"2592000", 30 * 24 * time.Hour, ""},
		{"2592001", 0, ""},
		{"99999999999999999999999", 0, ""},
		{"1.5", 0, ""},
		{"Sun, 29 Nov 2026 12:05:00 GMT", 0, "2026-11-29T12:05:00Z"},  // IMF-fixdate
		{"Sunday, 29-Nov-26 12:05:00 GMT", 0, "2026-11-29T12:05:00Z"}, // RFC 850
		{"Sun Nov 29 12:05:00 2026", 0, "2026-11-29T12:05:00Z"},       // asctime
		{"Sun Nov  1 12:05:00 2026", 0, ""},                           // in the past
		{"Sun, 29 Nov 2026 12:00:00 GMT", 0, ""},                      // exactly now: never "now"
		{"Sun, 29 Nov 2026 11:59:59 GMT", 0, ""},                      // past
		{"Tue, 29 Dec 2026 12:00:01 GMT", 0, ""},                      // beyond 30 days
		{"Fri, 01 Jan 100000 00:00:00 GMT", 0, ""},                    // absurd
		{"tomorrow", 0, ""},
		{"", 0, ""},
	} {
		d, reset := ParseRetryAfter(tt.in, pinned)
		if d != tt.wantD {
			t.Errorf("ParseRetryAfter(%q): got delay %v, want %v", tt.in, d, tt.wantD)
		}
		if got := fmtTime(reset); got != tt.wantReset {
			t.Errorf("ParseRetryAfter(%q): got reset %q, want %q", tt.in, got, tt.wantReset)
		}
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func TestParseDurationHint(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"6m0s", 6 * time.Minute},
		{"12ms", 12 * time.Millisecond},
		{"1h2m3.5s", time.Hour + 2*time.Minute + 3500*time.Millisecond},
		{"30s", 30 * time.Second},
		{"35.846185681s", 35846185681 * time.Nanosecond},
		{"20 seconds", 20 * time.Second},
		{"2 days 3 hours 5 minutes", 51*time.Hour + 5*time.Minute},
		{"1m, 30s", 90 * time.Second},
		{"1 minute and 30 seconds", 90 * time.Second},
		{"0s", 0},
		{"-1s", 0},
		{"31d", 0},
		{"9999999999999999h", 0},
		{"1e400s", 0},
		{"soon", 0},
		{"5 fortnights", 0},
		{"20s later", 0},
		{"", 0},
	} {
		if got := ParseDurationHint(tt.in); got != tt.want {
			t.Errorf("ParseDurationHint(%q): got %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseResetTime(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"2026-11-29T12:00:30Z", "2026-11-29T12:00:30Z"},
		{"2026-11-29T14:00:30+02:00", "2026-11-29T12:00:30Z"},
		{"2026-11-29T12:00:00Z", ""}, // now
		{"2026-11-28T12:00:00Z", ""}, // past
		{"2027-11-29T12:00:00Z", ""}, // > 30 days
		{"1795978800", "2026-11-29T19:00:00Z"},
		{"1795978800000", "2026-11-29T19:00:00Z"}, // milliseconds
		{"1700000000", ""},                        // past
		{"99999999999999999999", ""},              // overflow
		{"3000000000000000", ""},                  // year ~97000
		{"not a time", ""},
	} {
		if got := fmtTime(ParseResetTime(tt.in, pinned)); got != tt.want {
			t.Errorf("ParseResetTime(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestHeaderHints(t *testing.T) {
	for _, tt := range []struct {
		name      string
		headers   map[string]string
		wantD     time.Duration
		wantReset string
	}{
		{"retry-after seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second, ""},
		{"retry-after-ms wins over retry-after", map[string]string{"retry-after-ms": "1500", "retry-after": "2"}, 1500 * time.Millisecond, ""},
		{"retry-after-ms fractional", map[string]string{"retry-after-ms": "250.5"}, 250500 * time.Microsecond, ""},
		{"retry-after-ms negative dropped", map[string]string{"retry-after-ms": "-1", "retry-after": "3"}, 3 * time.Second, ""},
		{"openai reset durations: later bucket", map[string]string{"x-ratelimit-reset-requests": "12ms", "x-ratelimit-reset-tokens": "6m0s"}, 6 * time.Minute, ""},
		{"retry-after date", map[string]string{"retry-after": "Sun, 29 Nov 2026 12:05:00 GMT"}, 0, "2026-11-29T12:05:00Z"},
		{"x-ratelimit-reset epoch", map[string]string{"X-RateLimit-Reset": "1795978800"}, 0, "2026-11-29T19:00:00Z"},
		{"anthropic resets, latest wins", map[string]string{
			"anthropic-ratelimit-requests-reset": "2026-11-29T12:00:10Z",
			"anthropic-ratelimit-tokens-reset":   "2026-11-29T12:01:00Z",
		}, 0, "2026-11-29T12:01:00Z"},
		{"anthropic reset in the past", map[string]string{"anthropic-ratelimit-tokens-reset": "2026-11-29T11:00:00Z"}, 0, ""},
		{"garbage", map[string]string{"retry-after": "soon", "x-ratelimit-reset-tokens": "later"}, 0, ""},
		{"none", nil, 0, ""},
	} {
		d, reset := headerHints(tt.headers, pinned)
		if d != tt.wantD || fmtTime(reset) != tt.wantReset {
			t.Errorf("%s: got (%v, %q), want (%v, %q)", tt.name, d, fmtTime(reset), tt.wantD, tt.wantReset)
		}
	}
}

func TestTextHints(t *testing.T) {
	for _, tt := range []struct {
		name      string
		now       time.Time
		text      string
		wantD     time.Duration
		wantReset string
	}{
		{"try again in", pinned, "Please try again in 20s.", 20 * time.Second, ""},
		{"retry in fractional", pinned, "Please retry in 3.5s.", 3500 * time.Millisecond, ""},
		{"retry in long fraction", pinned, "Please retry in 35.846185681s.", 35846185681 * time.Nanosecond, ""},
		{"try again in words", pinned, "try again in 2 minutes", 2 * time.Minute, ""},
		{"go duration", pinned, "Please try again in 1m30.5s.", 90500 * time.Millisecond, ""},
		{"ms", pinned, "Please try again in 12ms", 12 * time.Millisecond, ""},
		{"no number", pinned, "Please try again in a few minutes", 0, ""},
		{"too far", pinned, "try again in 40 days", 0, ""},
		{"try again at later today UTC", pinned, "try again at 5:40 PM.", 0, "2026-11-29T17:40:00Z"},
		{"try again at already passed: tomorrow", pinned, "try again at 9:15 AM", 0, "2026-11-30T09:15:00Z"},
		{"try again at same minute is tomorrow", pinned, "try again at 12:00 PM", 0, "2026-11-30T12:00:00Z"},
		{"24h clock", pinned, "resets at 17:40", 0, "2026-11-29T17:40:00Z"},
		{"zone UTC", pinned, "try again at 5:40 PM UTC", 0, "2026-11-29T17:40:00Z"},
		{"zone in parens", pinned, "try again at 5:40 PM (America/New_York)", 0, "2026-11-29T22:40:00Z"},
		{"helsinki winter (UTC+2)", pinned, "resets 11:10am (Europe/Helsinki)", 0, "2026-11-30T09:10:00Z"},
		{"helsinki summer (UTC+3)", time.Date(2026, 7, 1, 6, 0, 0, 0, time.UTC), "resets 11:10am (Europe/Helsinki)", 0, "2026-07-01T08:10:00Z"},
		{"next occurrence crosses DST start", time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC), "resets 10am (Europe/Helsinki)", 0, "2026-03-29T07:00:00Z"},
		{"next occurrence crosses DST end", time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC), "resets 10am (Europe/Helsinki)", 0, "2026-10-25T08:00:00Z"},
		{"unknown zone dropped", pinned, "resets 11:10am (Mars/Olympus)", 0, ""},
		{"claude short", pinned, "5-hour limit reached ∙ resets 3pm", 0, "2026-11-29T15:00:00Z"},
		{"month day", pinned, "Weekly limit reached ∙ resets Dec 3, 10am", 0, "2026-12-03T10:00:00Z"},
		{"month day already passed this year: next year is > 30 days", pinned, "resets Nov 1, 10am", 0, ""},
		{"codex dated", pinned, "try again at Dec 2nd, 2026 9:05 AM.", 0, "2026-12-02T09:05:00Z"},
		{"feb 30 dropped", pinned, "resets Feb 30, 10am", 0, ""},
		{"hour out of range", pinned, "try again at 13:75", 0, ""},
		{"13pm dropped", pinned, "try again at 13 pm", 0, ""},
		{"bare number is not a clock", pinned, "retry 3 times", 0, ""},
		{"rfc3339", pinned, "limit resets at 2026-11-29T18:00:00Z", 0, "2026-11-29T18:00:00Z"},
		{"rfc3339 past", pinned, "limit resets at 2026-11-29T08:00:00Z", 0, ""},
		{"year 100000", pinned, "resets at 100000-01-01T00:00:00Z", 0, ""},
		{"regain access", pinned, "You will regain access on 2026-12-01 at 00:00 UTC.", 0, "2026-12-01T00:00:00Z"},
		{"regain access past", pinned, "You will regain access on 2026-08-01 at 00:00 UTC.", 0, ""},
		{"regain access bad date", pinned, "You will regain access on 2026-02-30 at 00:00 UTC.", 0, ""},
		{"both", pinned, "Rate limited. Please try again in 20s or after the limit resets at 2026-11-29T13:00:00Z", 20 * time.Second, "2026-11-29T13:00:00Z"},
	} {
		vw := newView(&Evidence{Source: SourceRPCError, Message: tt.text})
		d, reset := textHints(vw, tt.now)
		if d != tt.wantD || fmtTime(reset) != tt.wantReset {
			t.Errorf("%s: %q: got (%v, %q), want (%v, %q)", tt.name, tt.text, d, fmtTime(reset), tt.wantD, tt.wantReset)
		}
	}
}

func TestJSONHints(t *testing.T) {
	for _, tt := range []struct {
		name      string
		data      string
		wantD     time.Duration
		wantReset string
	}{
		{"google retryDelay", `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"30s"}]}}`, 30 * time.Second, ""},
		{"google retryDelay fractional", `{"error":{"details":[{"retryDelay":"1.5s"}]}}`, 1500 * time.Millisecond, ""},
		{"google retryDelay in an embedded body", `{"message":"got status: 429. {\"error\":{\"details\":[{\"retryDelay\":\"7s\"}]}}"}`, 7 * time.Second, ""},
		{"codex resets_in_seconds", `{"codex_error_info":"usage_limit_exceeded","resets_in_seconds":3600}`, time.Hour, ""},
		{"codex resets_at epoch", `{"resets_at":1795978800}`, 0, "2026-11-29T19:00:00Z"},
		{"resetAt rfc3339", `{"resetAt":"2026-11-29T12:30:00Z"}`, 0, "2026-11-29T12:30:00Z"},
		{"negative", `{"resets_in_seconds":-5,"retryDelay":"-3s"}`, 0, ""},
		{"absurd", `{"resets_in_seconds":1e300,"resets_at":99999999999999}`, 0, ""},
		{"wrong types", `{"retryDelay":30,"resets_at":true}`, 0, ""},
	} {
		vw := newView(&Evidence{Source: SourceRPCError, Data: []byte(tt.data)})
		d, reset := jsonHints(vw.objectNodes(), pinned)
		if d != tt.wantD || fmtTime(reset) != tt.wantReset {
			t.Errorf("%s: got (%v, %q), want (%v, %q)", tt.name, d, fmtTime(reset), tt.wantD, tt.wantReset)
		}
	}
}

func TestClaudeEpochHint(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"Claude AI usage limit reached|1795978800", "2026-11-29T19:00:00Z"},
		{"Claude AI usage limit reached|1700000000", ""},
		{"Claude AI usage limit reached|", ""},
	} {
		vw := newView(&Evidence{Source: SourceRPCError, Message: tt.text})
		if got := fmtTime(claudeEpochHint(vw, pinned)); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestExtractTimingNeedsAClock(t *testing.T) {
	vw := newView(&Evidence{Source: SourceRPCError, Message: "Please try again in 20s."})
	if d, reset := extractTiming([]string{TimingText}, vw, time.Time{}); d != nil || reset != nil {
		t.Errorf("zero now: got (%v, %v), want no hints", d, reset)
	}
	d, _ := extractTiming([]string{TimingText}, vw, pinned)
	if d == nil || *d != 20*time.Second {
		t.Errorf("got %v, want 20s", d)
	}
}

// TestVerdictTiming: one encoding of a verdict's hints for every output —
// milliseconds, and RFC 3339 whole seconds never earlier than the hint.
func TestVerdictTiming(t *testing.T) {
	d := 1500 * time.Millisecond
	whole := time.Date(2026, 11, 29, 12, 30, 0, 0, time.FixedZone("CET", 3600))
	frac := time.Date(2026, 11, 29, 12, 30, 0, 500_000_000, time.UTC)
	for _, tt := range []struct {
		name      string
		v         Verdict
		ms        string
		resetWant string
	}{
		{"none", Verdict{}, "null", "null"},
		{"delay", Verdict{RetryAfter: &d}, "1500", "null"},
		{"reset in another zone", Verdict{ResetAt: &whole}, "null", `"2026-11-29T11:30:00Z"`},
		{"a fraction rounds up", Verdict{ResetAt: &frac}, "null", `"2026-11-29T12:30:01Z"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v.Timing())
			if err != nil {
				t.Fatal(err)
			}
			want := `{"retryAfterMs":` + tt.ms + `,"resetAt":` + tt.resetWant + `}`
			if string(b) != want {
				t.Errorf("got %s, want %s", b, want)
			}
		})
	}
}
