package observers

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Stderr as evidence. An agent's stderr holds its logs of the whole
// session: the failure behind the turn's answer, and background work it
// repeats on a timer (telemetry, analytics and metrics exports, update
// checks) whose failures look like provider failures ("getaddrinfo
// ENOTFOUND telemetry.example.dev"). What is kept for the classifier is
// what may be about the turn's failure:
//
//   - lines that arrived at most StderrWindow before the answer (each
//     line carries the stamp of the event that read it; the answer is
//     another event's stamp — one clock per event), never a line from
//     minutes earlier;
//   - and not noise. A line is noise by its shape, not by one agent's
//     spelling: it names background work (noiseWords: telemetry,
//     analytics, metrics, OpenTelemetry and its exporters, an update
//     check, crash reporting — in its words or in the host it names); or
//     its shape (the line with digits and hex runs folded) repeated at
//     least noiseRepeats times in the session, and either on a timer (the
//     latest two gaps between sightings within a third of each other —
//     an agent's own retries back off, a timer does not) or naming only hosts
//     other than the provider's (those the agent's own report names; a
//     report that names none leaves every host possible). Noise is neither evidence nor a retry note, and never
//     reaches safeExcerpt.
//
// Memory is bounded: maxTurnStderr lines per turn, and noiseShapes shape
// counts per session tracker (the least recently seen is forgotten).

// StderrWindow is how long before the answer a stderr line may be
// evidence of the turn's failure.
const StderrWindow = 30 * time.Second

const (
	noiseShapes  = 64  // shapes remembered, per tracker
	noiseRepeats = 3   // occurrences of one shape that make a repeated line
	shapeBytes   = 160 // bytes of a line its shape is taken from
)

// noiseWord is a word that names background work whose failures are not
// the provider's, matched in a line's ASCII-lower-cased head. inside: it
// counts inside identifiers too (OTLPExporterError, telemetryClient);
// otherwise at a word's start (an underscore, a dash or a dot is a word's
// edge), and with whole also at its end.
type noiseWord struct {
	w             string
	inside, whole bool
}

var noiseWordList = []noiseWord{
	{"telemetry", true, false}, {"otlp", true, false}, {"exporter", true, false}, {"analytics", true, false},
	{"statsig", true, false}, {"posthog", true, false}, {"mixpanel", true, false}, {"datadog", true, false},
	{"otel", false, true}, {"metrics", false, true}, {"sentry", false, true}, {"amplitude", false, true},
	{"segment.io", false, true},
	{"crash report", false, false}, {"crash-report", false, false}, {"crash_report", false, false},
	{"crashreport", false, false}, {"update check", false, false}, {"update-check", false, false},
	{"update_check", false, false}, {"updatecheck", false, false}, {"check for update", false, false},
	{"checking for update", false, false},
}

// noiseByFirst indexes noiseWordList by first byte: one pass over a line
// looks only at the words that may start at each byte.
var noiseByFirst = func() (t [256][]noiseWord) {
	for _, w := range noiseWordList {
		t[w.w[0]] = append(t[w.w[0]], w)
	}
	return t
}()

// hostRe finds host names a line names: in a URL, after a DNS or connect
// error code.
var hostRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(?:https?|wss?|grpcs?)://([a-z0-9][a-z0-9.-]*[a-z0-9])|(?:ENOTFOUND|EAI_AGAIN|getaddrinfo|lookup|resolve)\s+([a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)+)`)
})

// stderrLine is one stderr line of a turn.
type stderrLine struct {
	text  string
	at    time.Time
	shape uint64
}

// shapeTable counts stderr line shapes, bounded.
type shapeTable struct {
	counts map[uint64]*shapeCount
	tick   uint64
}

type shapeCount struct {
	n      uint32
	last   uint64        // tick of the latest sighting
	at     time.Time     // stamp of the latest sighting
	gap    time.Duration // between the latest two sightings
	steady bool          // the latest gap is within a third of the one before: a timer
}

// see counts one sighting of shape at now and returns how often it was
// seen.
func (s *shapeTable) see(shape uint64, now time.Time) uint32 {
	if s.counts == nil {
		s.counts = make(map[uint64]*shapeCount, noiseShapes)
	}
	s.tick++
	c := s.counts[shape]
	if c == nil {
		if len(s.counts) >= noiseShapes {
			var old uint64
			oldest := s.tick
			for k, v := range s.counts {
				if v.last < oldest {
					old, oldest = k, v.last
				}
			}
			delete(s.counts, old)
		}
		c = &shapeCount{}
		s.counts[shape] = c
	}
	if c.n > 0 {
		gap := now.Sub(c.at)
		c.steady = c.gap > 0 && gap > 0 && 3*gap >= 2*c.gap && 2*gap <= 3*c.gap
		c.gap = gap
	}
	c.n++
	c.last, c.at = s.tick, now
	return c.n
}

// get returns what the table knows of shape.
func (s *shapeTable) get(shape uint64) shapeCount {
	if s == nil {
		return shapeCount{}
	}
	if c := s.counts[shape]; c != nil {
		return *c
	}
	return shapeCount{}
}

// lineShape folds what changes between repetitions of one log line —
// digits, hex runs, time stamps — and hashes the rest.
func lineShape(line string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211 // FNV-1a
	h := uint64(offset)
	prev := byte(0)
	for i := 0; i < len(line) && i < shapeBytes; i++ {
		c := line[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f' && prev == '0', c >= 'A' && c <= 'F' && prev == '0':
			c = '0'
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		}
		if c == '0' && prev == '0' {
			continue
		}
		prev = c
		h = (h ^ uint64(c)) * prime
	}
	return h
}

// backgroundWork reports whether a line names background work. It looks
// at the line's first noiseHead bytes, lower-cased on the stack, in one
// pass: no allocation, no regular expression.
func backgroundWork(line string) bool {
	var buf [noiseHead]byte
	n := copy(buf[:], line)
	b := buf[:n]
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	for i, c := range b {
		for _, w := range noiseByFirst[c] {
			if !bytes.HasPrefix(b[i:], []byte(w.w)) {
				continue
			}
			j := i + len(w.w)
			if w.inside || (i == 0 || !isLetter(b[i-1])) && (!w.whole || j == len(b) || !isLetter(b[j])) {
				return true
			}
		}
	}
	return false
}

// noiseHead is how much of a line backgroundWork reads.
const noiseHead = 4 * shapeBytes

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// hostsOf returns the host names a line names (lower case, at most a few).
func hostsOf(line string) []string {
	var out []string
	for _, m := range hostRe().FindAllStringSubmatch(headString(line, 4096), 4) {
		h := m[1]
		if h == "" {
			h = m[2]
		}
		out = append(out, strings.ToLower(h))
	}
	return out
}

func headString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// WithoutNoise returns the lines of a stderr tail (the relay's, outside
// any turn: a set-up or launch failure) that are not noise, by the same
// tests as StderrNear but the window: background work, a shape on a
// timer, a repeated line naming only hosts report does not.
func (tr *Tracker) WithoutNoise(lines []string, report string) []string {
	var out []string
	var provider []string
	looked := false
	for _, l := range lines {
		if backgroundWork(l) {
			continue
		}
		if c := tr.shapes.get(lineShape(l)); c.n >= noiseRepeats {
			if c.steady {
				continue
			}
			if !looked {
				provider, looked = hostsOf(report), true
			}
			if unrelatedHost(hostsOf(l), provider) {
				continue
			}
		}
		out = append(out, l)
	}
	return out
}

// StderrNear returns the turn's stderr lines that may be evidence of the
// failure answered at now: at most StderrWindow old, and not a line
// repeated on a timer or naming only hosts that report (the agent's own
// error text) does not name. Lines naming background work were never
// kept.
func (t *Turn) StderrNear(now time.Time, report string) []string {
	var out []string
	var provider []string
	looked := false
	for _, l := range t.stderr {
		if now.Sub(l.at) > StderrWindow {
			continue
		}
		if c := t.shapes.get(l.shape); c.n >= noiseRepeats {
			if c.steady {
				continue // on a timer
			}
			if !looked {
				provider, looked = hostsOf(report), true
			}
			if unrelatedHost(hostsOf(l.text), provider) {
				continue
			}
		}
		out = append(out, l.text)
	}
	return out
}

// unrelatedHost reports whether a line names hosts and none of them is
// the provider's (the hosts the agent's report names). Without a
// provider host nothing is unrelated.
func unrelatedHost(hosts, provider []string) bool {
	if len(hosts) == 0 || len(provider) == 0 {
		return false
	}
	for _, h := range hosts {
		for _, p := range provider {
			if h == p {
				return false
			}
		}
	}
	return true
}
