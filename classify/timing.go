package classify

import (
	_ "time/tzdata" // IANA zones in hints ("resets 11:10am (Europe/Helsinki)") work on any machine

	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// MaxHint is the longest retry delay or reset distance the engine accepts;
// anything further is treated as absurd and dropped.
const MaxHint = 30 * 24 * time.Hour

// extractTiming runs the named extractors in order. The first valid
// relative hint becomes retryAfter and the first valid absolute hint
// becomes resetAt. A hint is valid only when it lies strictly after now
// and at most MaxHint after it; a zero now validates nothing.
func extractTiming(names []string, vw *view, now time.Time) (*time.Duration, *time.Time) {
	if now.IsZero() || len(names) == 0 {
		return nil, nil
	}
	var ra *time.Duration
	var reset *time.Time
	for _, name := range names {
		var d time.Duration
		var t time.Time
		switch name {
		case TimingHeaders:
			d, t = headerHints(vw.ev.Headers, now)
		case TimingJSON:
			d, t = jsonHints(vw.objectNodes(), now)
		case TimingText:
			d, t = textHints(vw, now)
		case TimingClaudeEpoch:
			t = claudeEpochHint(vw, now)
		}
		if ra == nil && d > 0 {
			ra = &d
		}
		if reset == nil && !t.IsZero() {
			u := t.UTC()
			reset = &u
		}
	}
	return ra, reset
}

// validDuration keeps d when 0 < d <= MaxHint.
func validDuration(d time.Duration) time.Duration {
	if d <= 0 || d > MaxHint {
		return 0
	}
	return d
}

// validReset keeps t when now < t <= now+MaxHint.
func validReset(t, now time.Time) time.Time {
	if t.IsZero() || !t.After(now) || t.Sub(now) > MaxHint {
		return time.Time{}
	}
	return t
}

// ParseRetryAfter parses an HTTP Retry-After value: delta-seconds or an
// HTTP-date in any of its three forms (IMF-fixdate, RFC 850, asctime). It
// returns a relative delay or an absolute time, validated against now.
func ParseRetryAfter(v string, now time.Time) (time.Duration, time.Time) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, time.Time{}
	}
	if allDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(MaxHint/time.Second) {
			return 0, time.Time{}
		}
		return validDuration(time.Duration(n) * time.Second), time.Time{}
	}
	for _, layout := range []string{
		"Mon, 02 Jan 2006 15:04:05 GMT", // IMF-fixdate
		time.RFC850,                     // Sunday, 06-Nov-94 08:49:37 GMT
		time.ANSIC,                      // Sun Nov  6 08:49:37 1994
	} {
		if t, err := time.Parse(layout, v); err == nil {
			return 0, validReset(t.UTC(), now)
		}
	}
	return 0, time.Time{}
}

// ParseDurationHint parses provider duration strings: Go/OpenAI style
// ("6m0s", "12ms", "1h2m3.5s", "30s") and spelled-out forms ("20 seconds",
// "2 days 3 hours 5 minutes", "1m, 30s"). Results outside (0, MaxHint] are 0.
func ParseDurationHint(s string) time.Duration {
	d, n := scanDuration(s)
	if n == 0 || strings.TrimSpace(s[n:]) != "" {
		return 0
	}
	return validDuration(d)
}

var durationUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "us": time.Microsecond, "µs": time.Microsecond,
	"ms": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

// scanDuration reads a sequence of <number><unit> terms from the start of
// s and returns their sum and the number of bytes consumed (0 when no term
// was read). It stops at the first text that is not a term.
func scanDuration(s string) (time.Duration, int) {
	var total float64
	consumed := 0
	i := 0
	for {
		j := skipSpace(s, i)
		if consumed > 0 {
			// Separators between terms: ",", "and".
			if j < len(s) && s[j] == ',' {
				j = skipSpace(s, j+1)
			}
			if strings.HasPrefix(s[j:], "and ") {
				j = skipSpace(s, j+4)
			}
		}
		numStart := j
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
			j++
		}
		if j == numStart {
			break
		}
		num, err := strconv.ParseFloat(s[numStart:j], 64)
		if err != nil {
			break
		}
		j = skipSpace(s, j)
		unitStart := j
		for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || strings.HasPrefix(s[j:], "µ")) {
			if strings.HasPrefix(s[j:], "µ") {
				j += len("µ")
				continue
			}
			j++
		}
		unitText := strings.ToLower(s[unitStart:j])
		// Go durations glue terms ("1m30s"): the unit ends at the next digit.
		unit, ok := durationUnits[unitText]
		if !ok {
			break
		}
		total += num * float64(unit)
		if total > float64(math.MaxInt64) {
			return 0, 0
		}
		i = j
		consumed = j
	}
	if consumed == 0 {
		return 0, 0
	}
	return time.Duration(total), consumed
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ParseResetTime parses an absolute reset: RFC 3339, or unix epoch seconds
// (milliseconds when 13 digits or more), validated against now.
func ParseResetTime(v string, now time.Time) time.Time {
	v = strings.TrimSpace(v)
	if allDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return time.Time{}
		}
		if len(v) >= 13 {
			return validReset(time.UnixMilli(n).UTC(), now)
		}
		return validReset(time.Unix(n, 0).UTC(), now)
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return validReset(t.UTC(), now)
	}
	return time.Time{}
}

// headerHints reads rate-limit headers, keys matched case-insensitively.
func headerHints(headers map[string]string, now time.Time) (time.Duration, time.Time) {
	if len(headers) == 0 {
		return 0, time.Time{}
	}
	h := make(map[string]string, len(headers))
	for k, v := range headers {
		h[strings.ToLower(strings.TrimSpace(k))] = v
	}
	var d time.Duration
	var t time.Time
	if v, ok := h["retry-after-ms"]; ok {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms > 0 && ms <= float64(MaxHint/time.Millisecond) {
			d = validDuration(time.Duration(ms * float64(time.Millisecond)))
		}
	}
	if v, ok := h["retry-after"]; ok {
		rd, rt := ParseRetryAfter(v, now)
		if d == 0 {
			d = rd
		}
		t = rt
	}
	if d == 0 {
		// OpenAI: time until each bucket resets; wait for the later one.
		for _, k := range []string{"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"} {
			if v, ok := h[k]; ok {
				if x := ParseDurationHint(v); x > d {
					d = x
				}
			}
		}
	}
	if t.IsZero() {
		// Absolute resets: x-ratelimit-reset (epoch seconds) and
		// Anthropic's anthropic-ratelimit-*-reset (RFC 3339); the latest wins.
		for _, k := range sortedHeaderKeys(h) {
			if k != "x-ratelimit-reset" && !(strings.HasPrefix(k, "anthropic-ratelimit-") && strings.HasSuffix(k, "-reset")) {
				continue
			}
			if x := ParseResetTime(h[k], now); x.After(t) {
				t = x
			}
		}
	}
	return d, t
}

func sortedHeaderKeys(h map[string]string) []string {
	m := make(map[string]any, len(h))
	for k := range h {
		m[k] = nil
	}
	return sortedKeys(m)
}

var (
	jsonDurationKeys = []string{"retryDelay", "retry_delay"}
	jsonSecondsKeys  = []string{"resets_in_seconds", "resetsInSeconds", "retry_after_seconds", "retryAfterSeconds", "retry_after", "retryAfter"}
	jsonResetKeys    = []string{"resets_at", "resetsAt", "reset_at", "resetAt", "resetTime", "reset_time"}
)

// jsonHints reads timing fields of structured error data (Google RetryInfo
// retryDelay, codex usage-limit resets_at / resets_in_seconds, …).
func jsonHints(objects []map[string]any, now time.Time) (time.Duration, time.Time) {
	var d time.Duration
	var t time.Time
	for _, obj := range objects {
		if d == 0 {
			for _, k := range jsonDurationKeys {
				if s, ok := obj[k].(string); ok {
					if x := ParseDurationHint(s); x > 0 {
						d = x
						break
					}
				}
			}
		}
		if d == 0 {
			for _, k := range jsonSecondsKeys {
				if s, ok := scalarText(obj[k]); ok && obj[k] != nil {
					if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && f <= float64(MaxHint/time.Second) {
						d = validDuration(time.Duration(f * float64(time.Second)))
						break
					}
				}
			}
		}
		if t.IsZero() {
			for _, k := range jsonResetKeys {
				if s, ok := scalarText(obj[k]); ok && obj[k] != nil {
					if x := ParseResetTime(s, now); !x.IsZero() {
						t = x
						break
					}
				}
			}
		}
	}
	return d, t
}

var (
	relativeRe = regexp.MustCompile(`(?i)\b(?:(?:try\s+again|retry(?:ing)?|resets?)\s+(?:in|after)|(?:please\s+)?wait(?:\s+for)?)\s+`)
	absoluteRe = regexp.MustCompile(`(?i)\b(?:try\s+again|retry|resets?|renews?)(?:\s+(?:at|on))?\s+` +
		`(?:(\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:\d{2}))|` +
		`(?:(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(?:(\d{4}),?\s+)?(?:at\s+)?)?` +
		`(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?(?:\s*\(?\s*(utc|gmt|[A-Za-z]+/[A-Za-z_]+(?:/[A-Za-z_]+)?)\s*\)?)?)`)
)

// isoClockRe reads "You will regain access on 2026-08-01 at 00:00 UTC".
var isoClockRe = regexp.MustCompile(`(?i)\b(?:regain access|try again|retry|resets?|available(?: again)?)\s+(?:on|at|after)\s+(\d{4})-(\d{2})-(\d{2})(?:,?\s+at)?\s+(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\s*(utc|gmt|z)\b)?`)

var months = map[string]time.Month{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}

// textHints reads hints written in prose by providers and agents.
func textHints(vw *view, now time.Time) (time.Duration, time.Time) {
	var d time.Duration
	var t time.Time
	for _, f := range []string{FieldMessage, FieldData, FieldStderr} {
		s := vw.text(f)
		if s == "" {
			continue
		}
		if d == 0 {
			d = relativeHint(s)
		}
		if t.IsZero() {
			t = absoluteHint(s, now)
		}
	}
	return d, t
}

// relativeHint finds "try again in 20s", "Please retry in 3.5s", …
func relativeHint(s string) time.Duration {
	for _, loc := range relativeRe.FindAllStringIndex(s, 8) {
		if d, n := scanDuration(s[loc[1]:]); n > 0 {
			if d = validDuration(d); d > 0 {
				return d
			}
		}
	}
	return 0
}

// absoluteHint finds "try again at 5:40 PM", "resets 11:10am
// (Europe/Helsinki)", "resets Oct 9, 10am", "resets at <RFC 3339>". A
// clock time without a date is its next occurrence after now; without a
// zone it is UTC.
func absoluteHint(s string, now time.Time) time.Time {
	for _, m := range isoClockRe.FindAllStringSubmatch(s, 8) {
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		d, _ := strconv.Atoi(m[3])
		h, _ := strconv.Atoi(m[4])
		mi, _ := strconv.Atoi(m[5])
		sec, _ := strconv.Atoi(m[6])
		if mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59 {
			continue
		}
		t := time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC)
		if t.Day() != d {
			continue
		}
		if t = validReset(t, now); !t.IsZero() {
			return t
		}
	}
	for _, m := range absoluteRe.FindAllStringSubmatch(s, 8) {
		if t := absoluteFromMatch(m, now); !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

func absoluteFromMatch(m []string, now time.Time) time.Time {
	if m[1] != "" {
		v := strings.Replace(strings.ToUpper(m[1]), " ", "T", 1)
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}
		}
		return validReset(t.UTC(), now)
	}
	month, day, year, hour, minute, ampm, zone := m[2], m[3], m[4], m[5], m[6], strings.ToLower(strings.ReplaceAll(m[7], ".", "")), m[8]
	if ampm == "" && minute == "" {
		return time.Time{} // "retry 3 times" is not a clock time
	}
	h, _ := strconv.Atoi(hour)
	mi := 0
	if minute != "" {
		mi, _ = strconv.Atoi(minute)
	}
	switch ampm {
	case "am", "pm":
		if h < 1 || h > 12 {
			return time.Time{}
		}
		h %= 12
		if ampm == "pm" {
			h += 12
		}
	default:
		if h > 23 {
			return time.Time{}
		}
	}
	if mi > 59 {
		return time.Time{}
	}
	loc := time.UTC
	if zone != "" {
		switch strings.ToLower(zone) {
		case "utc", "gmt":
		default:
			l, err := time.LoadLocation(zone)
			if err != nil {
				return time.Time{}
			}
			loc = l
		}
	}
	local := now.In(loc)
	if month != "" {
		mo := months[strings.ToLower(month[:3])]
		dd, _ := strconv.Atoi(day)
		if dd < 1 || dd > 31 {
			return time.Time{}
		}
		y := local.Year()
		if year != "" {
			y, _ = strconv.Atoi(year)
		}
		t := time.Date(y, mo, dd, h, mi, 0, 0, loc)
		if t.Day() != dd {
			return time.Time{} // Feb 30th
		}
		if year == "" && !t.After(now) {
			t = time.Date(y+1, mo, dd, h, mi, 0, 0, loc)
		}
		return validReset(t.UTC(), now)
	}
	t := time.Date(local.Year(), local.Month(), local.Day(), h, mi, 0, 0, loc)
	if !t.After(now) {
		t = time.Date(local.Year(), local.Month(), local.Day()+1, h, mi, 0, 0, loc)
	}
	return validReset(t.UTC(), now)
}

var claudeEpochRe = regexp.MustCompile(`(?i)usage limit reached\|(\d{9,13})\b`)

// claudeEpochHint reads Claude Code's "Claude AI usage limit reached|<epoch>".
func claudeEpochHint(vw *view, now time.Time) time.Time {
	for _, f := range []string{FieldMessage, FieldData, FieldStderr} {
		if m := claudeEpochRe.FindStringSubmatch(vw.text(f)); m != nil {
			if t := ParseResetTime(m[1], now); !t.IsZero() {
				return t
			}
		}
	}
	return time.Time{}
}
