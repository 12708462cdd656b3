package observers

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestStderrNoise(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type line struct {
		s    float64
		text string
	}
	for _, tt := range []struct {
		name   string
		lines  []line
		answer float64
		report string
		want   []string
	}{
		{"background work by its words, first sighting included", []line{
			{1, "[telemetry] export failed: Error: getaddrinfo ENOTFOUND telemetry.example.dev"},
			{2, "OTLPExporterError: Not Found"},
			{3, "analytics: flush failed: connect ECONNREFUSED 10.0.0.1:443"},
			{4, "update check failed: fetch failed"},
			{5, "Error: 500 Internal Server Error"},
		}, 6, "", []string{"Error: 500 Internal Server Error"}},
		{"background work by its host", []line{
			{1, "request to https://o4504.ingest.sentry.io/api/1/envelope/ failed, reason: getaddrinfo ENOTFOUND o4504.ingest.sentry.io"},
			{2, "Error: getaddrinfo ENOTFOUND api.anthropic.com"},
		}, 3, "", []string{"Error: getaddrinfo ENOTFOUND api.anthropic.com"}},
		{"only lines near the answer", []line{
			{0, "Error: getaddrinfo ENOTFOUND api.example.com"},
			{100, "fetch failed"},
		}, 100 + StderrWindow.Seconds() - 1, "", []string{"fetch failed"}},
		{"a shape on a timer, without words or host", []line{
			{10, "warn: flush of 12 events failed (code 7)"},
			{20, "warn: flush of 3 events failed (code 7)"},
			{30, "warn: flush of 40 events failed (code 7)"},
			{31, "Error: 503 Service Unavailable"},
		}, 32, "", []string{"Error: 503 Service Unavailable"}},
		{"the agent's own retries back off: kept", []line{
			{10, "Error: getaddrinfo ENOTFOUND api.example.com (attempt 1)"},
			{12, "Error: getaddrinfo ENOTFOUND api.example.com (attempt 2)"},
			{16, "Error: getaddrinfo ENOTFOUND api.example.com (attempt 3)"},
		}, 17, "", []string{
			"Error: getaddrinfo ENOTFOUND api.example.com (attempt 1)",
			"Error: getaddrinfo ENOTFOUND api.example.com (attempt 2)",
			"Error: getaddrinfo ENOTFOUND api.example.com (attempt 3)"}},
		{"a repeated line naming another host than the report's", []line{
			{10, "Error: getaddrinfo ENOTFOUND events.example.net"},
			{12, "Error: getaddrinfo ENOTFOUND events.example.net"},
			{16, "Error: getaddrinfo ENOTFOUND events.example.net"},
		}, 17, "request to https://api.example.com/v1/messages failed", nil},
		{"a repeated line naming a host, the report naming none: kept", []line{
			{10, "Error: getaddrinfo ENOTFOUND events.example.net"},
			{12, "Error: getaddrinfo ENOTFOUND events.example.net"},
			{16, "Error: getaddrinfo ENOTFOUND events.example.net"},
		}, 17, "Internal error", []string{
			"Error: getaddrinfo ENOTFOUND events.example.net",
			"Error: getaddrinfo ENOTFOUND events.example.net",
			"Error: getaddrinfo ENOTFOUND events.example.net"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(AdapterCodex, DefaultSignatures)
			turn := tr.Start("s", t0)
			for _, l := range tt.lines {
				tr.Stderr(l.text, at(l.s))
			}
			if got := turn.StderrNear(at(tt.answer), tt.report); !slices.Equal(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestStderrNoiseIsNoNote(t *testing.T) {
	tr := NewTracker(AdapterCodex, DefaultSignatures)
	turn := tr.Start("s", time.Time{})
	tr.Stderr("[telemetry] export failed, retrying in 5s (attempt 1/3)", time.Time{})
	if turn.Evidence.StderrNotes != 0 || len(turn.Stderr()) != 0 {
		t.Errorf("notes %d, lines %q: background work counted", turn.Evidence.StderrNotes, turn.Stderr())
	}
}

func TestShapeTableBounded(t *testing.T) {
	tr := NewTracker(AdapterCodex, DefaultSignatures)
	tr.Start("s", time.Time{})
	for i := range 1000 {
		tr.Stderr(fmt.Sprintf("line %c%c distinct", 'a'+i%26, 'a'+i/26%26), time.Time{})
	}
	if n := len(tr.shapes.counts); n > noiseShapes {
		t.Errorf("%d shapes remembered, want at most %d", n, noiseShapes)
	}
}

func TestWithoutNoise(t *testing.T) {
	tr := NewTracker(AdapterCodex, DefaultSignatures)
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	tail := []string{"[telemetry] export failed: getaddrinfo ENOTFOUND telemetry.example.dev", "Error: 401 Unauthorized"}
	for i, l := range tail {
		tr.Stderr(l, t0.Add(time.Duration(i)*time.Second))
	}
	if got := tr.WithoutNoise(tail, ""); !slices.Equal(got, tail[1:]) {
		t.Errorf("got %q, want %q", got, tail[1:])
	}
}

// BenchmarkStderrLine is the cost of one ordinary stderr line (a log
// line naming no background work) while a turn is open.
func BenchmarkStderrLine(b *testing.B) {
	tr := NewTracker(AdapterCodex, DefaultSignatures)
	tr.Start("s", time.Time{})
	line := "2026-12-02T06:00:00.123Z INFO some_module::thing: processed request 12345 in 23ms, status ok, bytes 4096 more text here"
	b.ReportAllocs()
	for b.Loop() {
		tr.Stderr(line, time.Time{})
	}
}
