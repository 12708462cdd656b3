package catalogue

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/classify"
)

func embedded(t testing.TB) classify.Catalogue {
	t.Helper()
	c, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDefaultIsValid: the engine the proxy starts with (rules only, not
// linted at start) is the catalogue that compiles, lints clean and passes
// its fixtures here.
func TestDefaultIsValid(t *testing.T) {
	e := Default()
	if e.Version() == "" {
		t.Fatal("got empty version")
	}
	full, err := classify.Compile(embedded(t)) // Compile lints
	if err != nil {
		t.Fatal(err)
	}
	if f := full.Lint(); len(f) > 0 {
		t.Errorf("got lint findings %v, want none", f)
	}
	if !reflect.DeepEqual(e.Rules(), full.Rules()) || e.Version() != full.Version() {
		t.Errorf("Default: got catalogue %s with %d rules, want %s with %d rules, the same", e.Version(), len(e.Rules()), full.Version(), len(full.Rules()))
	}
	if got := Default(); got != e {
		t.Errorf("Default: got a new engine on the second call, want the same one")
	}
}

// TestFixtures runs every fixture: each positive fixture is classified by
// its own rule and collides with no other rule of its tier; each negative
// fixture is not matched by its rule.
func TestFixtures(t *testing.T) {
	e, err := classify.Compile(embedded(t))
	if err != nil {
		t.Fatal(err)
	}
	rep := e.Test()
	for _, r := range rep.Rules {
		for _, f := range r.Failures {
			t.Errorf("%s: %s", r.Rule, f)
		}
		if r.Positives == 0 || r.Negatives == 0 {
			t.Errorf("%s: got %d positive and %d negative fixtures, want at least one of each", r.Rule, r.Positives, r.Negatives)
		}
	}
	if got := len(rep.Rules); got != len(e.Rules()) {
		t.Errorf("got %d rules in the report, want %d", got, len(e.Rules()))
	}
}

func TestEveryRuleCodeHasAClass(t *testing.T) {
	for _, r := range Default().Rules() {
		if c := classify.ClassOf(r.Code); c == classify.ClassUnclassified {
			t.Errorf("rule %s: code %q has no class", r.ID, r.Code)
		}
	}
}

// TestOnlyProjectionRulesReadAssistantText guards against topic-word
// matching: assistant text is prose, and only the text-reported-failure
// projections (Cursor's "Error: RetriableError:", Copilot CLI's "Error:" and
// "Info: … Retrying...") may read it — adapter-scoped rules anchored at the
// start of the chunk by a prefix, for adapters known to report failures as
// text.
// TestChunkRulesOfAnAdapterAreProjections: assistant text reaches the
// engine only as what a projection handed over (a chunk that is an error
// report, see observers); the rules scoped to one adapter that read chunks
// are that adapter's projection rules, anchored at the start of the chunk.
func TestChunkRulesOfAnAdapterAreProjections(t *testing.T) {
	for _, r := range Default().Rules() {
		if r.Adapter == classify.AnyAdapter {
			continue
		}
		for _, s := range r.Sources {
			if s == classify.SourceMessageChunk && r.Match.Prefix == nil {
				t.Errorf("rule %s (adapter %s) reads message chunks without a chunk-anchored prefix", r.ID, r.Adapter)
			}
		}
	}
}

func decode(t testing.TB, f classify.Fixture) classify.Evidence {
	t.Helper()
	var ev classify.Evidence
	if err := json.Unmarshal(f.Evidence, &ev); err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	ev.Now = classify.DefaultFixtureNow
	if f.Now != "" {
		ev.Now, _ = time.Parse(time.RFC3339, f.Now)
	}
	return ev
}

// TestAdapterScoping replays every positive fixture of an adapter-scoped
// rule under every other adapter identity: the rule must never fire.
func TestAdapterScoping(t *testing.T) {
	e := Default()
	scoped := map[string]string{}
	for _, r := range e.Rules() {
		if r.Adapter != classify.AnyAdapter {
			scoped[r.ID] = r.Adapter
		}
	}
	n := 0
	for _, f := range embedded(t).Fixtures {
		own, ok := scoped[f.Rule]
		if !ok || !f.Match {
			continue
		}
		for _, other := range append([]string{"", "aider", "opencode"}, classify.Adapters...) {
			if other == own {
				continue
			}
			ev := decode(t, f)
			ev.Adapter = other
			if v := e.Classify(ev); v.Rule == f.Rule {
				t.Errorf("%s: rule scoped to %s fired for adapter %q", f.Name, own, other)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no adapter-scoped fixtures")
	}
}

func TestStaleEvidenceIsUnclassified(t *testing.T) {
	e := Default()
	for _, f := range embedded(t).Fixtures {
		if !f.Match {
			continue
		}
		ev := decode(t, f)
		ev.Stale = true
		if v := e.Classify(ev); v.Code != classify.CodeUnclassified || v.Reason != classify.ReasonStale || v.RetryAfter != nil || v.ResetAt != nil {
			t.Errorf("%s: stale evidence got %+v, want unclassified (stale) without hints", f.Name, v)
		}
	}
}

func TestConflictingEvidenceIsUnclassified(t *testing.T) {
	e := Default()
	for _, tt := range []struct {
		name string
		ev   classify.Evidence
	}{
		{"two anthropic bodies", classify.Evidence{Source: classify.SourceRPCError,
			Message: `API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			Data:    json.RawMessage(`{"previous":{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}}`)}},
		{"openai quota and an overloaded server", classify.Evidence{Source: classify.SourceHTTP, HTTPStatus: 429,
			Data: json.RawMessage(`[{"error":{"code":"insufficient_quota"}},{"error":{"type":"server_error","code":"server_overloaded"}}]`)}},
		// Two kinds of the phrase table that disagree, neither declared
		// the more specific: a wrong class would be worse.
		{"a wrong key and a prompt too long", classify.Evidence{Source: classify.SourceRPCError,
			Message: "Incorrect API key provided. Also: maximum context length is 8192 tokens"}},
		// No slot left for a model, with no status: a launcher that cannot
		// place it (hard) or a server momentarily full (transient); the
		// kinds disagree (docs/CATALOGUE.md placement-vs-capacity).
		{"a slot for the model with no status", classify.Evidence{Source: classify.SourceRPCError,
			Message: "launch_model: no free slot left for this model"}},
	} {
		v := e.Classify(tt.ev)
		if v.Code != classify.CodeUnclassified || v.Reason != classify.ReasonConflict || len(v.Conflicts) < 2 {
			t.Errorf("%s: got code %s reason %q conflicts %v, want unclassified conflict", tt.name, v.Code, v.Reason, v.Conflicts)
		}
	}
}

// prose is what agents say about failures: topic words, no failure
// signature. None of it classifies, whatever the source. (Prose that
// quotes a signature — "I fixed the 'stream disconnected' test" — is kept
// from the engine by the projection, which hands over only chunks that
// are an error report: observers' tests.)
var prose = []string{
	"the session died on rate limit, so I moved the card",
	"I hit a 429 earlier and the provider was overloaded; retrying with Retry-After support now.",
	"Quota handling: when the quota is exceeded we back off and try again in 20s.",
	"error: RetriableError handling is in retry.go",
	"please slow down, the user asked for a careful review",
	"Authentication flow refactored; see auth.go",
	"The parking lot is at capacity",
	"processed 429 files",
	"Tool call failed: open rate_limit.go: no such file or directory",
	"I updated the context window docs and the maximum context length table",
	"The daily quota is 50 requests; plan accordingly.",
	"Refactored usage-limit handling into limits.go",
	"Added subscription management pages to the dashboard",
	"Deployment finished; the new endpoint is live.",
	"The connection pool was resized",
	"The service layer was refactored",
	"The request handler was rewritten",
	// Prose that names a failure in its own words (classify/mention.go).
	"If you get 'rate limit exceeded', lower the concurrency and try again.",
	"That 'invalid api key' message usually means the key was revoked.",
	"I got 'context length exceeded' on the big file, so I split it first.",
	"When the server returns 503 Service Unavailable the client backs off.",
	"// retry when the provider is overloaded",
}

func TestAgentProseNeverClassifies(t *testing.T) {
	e := Default()
	for _, p := range prose {
		for _, a := range append([]string{""}, classify.Adapters...) {
			for _, ev := range []classify.Evidence{
				{Source: classify.SourceMessageChunk, Adapter: a, Message: p},
				{Source: classify.SourceRPCError, Adapter: a, Message: p},
				{Source: classify.SourceStderr, Adapter: a, Stderr: []string{p}},
			} {
				ev.Now = classify.DefaultFixtureNow
				if v := e.Classify(ev); v.Code != classify.CodeUnclassified {
					t.Errorf("%s %q (adapter %q): got %s by %s, want unclassified", ev.Source, p, a, v.Code, v.Rule)
				}
			}
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, c any) string {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := embedded(t)
	good.Version = "operator-1"
	e, err := Load(write("good.json", good))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if e.Version() != "operator-1" {
		t.Errorf("got version %q, want operator-1", e.Version())
	}

	bad := embedded(t)
	bad.Fixtures = append([]classify.Fixture(nil), bad.Fixtures...)
	for i, f := range bad.Fixtures {
		if f.Rule == "phrase.timeout.v1" && f.Match {
			bad.Fixtures[i].Rule = "phrase.network.v1"
			bad.Fixtures[i].Name = "misfiled timeout fixture"
			break
		}
	}
	if _, err := Load(write("bad.json", bad)); err == nil || !strings.Contains(err.Error(), "misfiled timeout fixture") {
		t.Errorf("failing fixture: got %v, want an error naming the fixture", err)
	}

	noFixtures := embedded(t)
	noFixtures.Fixtures = nil
	if _, err := Load(write("nofix.json", noFixtures)); err == nil || !strings.Contains(err.Error(), "no positive fixture") {
		t.Errorf("no fixtures: got %v, want a missing-fixture error", err)
	}

	for name, body := range map[string]string{
		"syntax":  `{"version":`,
		"unknown": `{"version":"x","rules":[],"extra":1}`,
		"trailer": `{"version":"x","rules":[]} {}`,
	} {
		p := filepath.Join(dir, name+".json")
		os.WriteFile(p, []byte(body), 0o600)
		if _, err := Load(p); err == nil {
			t.Errorf("%s: got nil error", name)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing file: got nil error")
	}
}

func BenchmarkClassifyCorpus(b *testing.B) {
	e := Default()
	var evs []classify.Evidence
	for _, f := range embedded(b).Fixtures {
		evs = append(evs, decode(b, f))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, ev := range evs {
			e.Classify(ev)
		}
	}
	b.ReportMetric(float64(b.N*len(evs))/b.Elapsed().Seconds(), "verdicts/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/verdict")
}
