package classify

import (
	"encoding/json"
	"strings"
	"testing"
)

func intp(i int) *int { return &i }

// testCatalogue is a small hand-written catalogue exercising each matcher.
func testCatalogue() Catalogue {
	return Catalogue{
		Version: "test-1",
		Rules: []Rule{
			{ID: "t.broad_429.v1", Tier: 3, Adapter: AnyAdapter, Sources: []Source{SourceRPCError, SourceStderr}, Code: CodeRateLimited, Confidence: "medium", Scope: "provider",
				Match: Match{Literal: "429", Regex: `\b429\b`}},
			{ID: "t.overloaded.v1", Tier: 1, Adapter: AnyAdapter, Sources: []Source{SourceRPCError, SourceHTTP}, Code: CodeProviderOverloaded, Confidence: "high", Scope: "provider",
				Match: Match{Fields: []FieldMatch{{Path: "type", Values: []string{"error"}}, {Path: "error.type", Values: []string{"overloaded_error"}}}}, Timing: []string{TimingHeaders}},
			{ID: "t.auth.v1", Tier: 1, Adapter: AnyAdapter, Sources: []Source{SourceRPCError, SourceHTTP}, Code: CodeAuthRequired, Confidence: "high", Scope: "account",
				Match: Match{Fields: []FieldMatch{{Path: "error.type", Values: []string{"authentication_error"}}}}},
			{ID: "t.codex_usage.v1", Tier: 1, Adapter: "codex-acp", Sources: []Source{SourceRPCError}, Code: CodeQuotaLimited, Confidence: "high", Scope: "account",
				Match: Match{RPCCode: intp(-32603), Fields: []FieldMatch{{Path: "codex_error_info|codexErrorInfo", Values: []string{"usage_limit_exceeded"}}}}, Timing: []string{TimingJSON}},
			{ID: "t.cursor.v1", Tier: 2, Adapter: "cursor-acp", Sources: []Source{SourceMessageChunk}, Code: CodeAgentTransportLost, Confidence: "high", Scope: "provider",
				Match: Match{Prefix: &PrefixMatch{Prefix: "Error: RetriableError:", MaxSuffixBytes: 256}, In: []string{FieldMessage}}, Veto: []string{`(?i)context canceled`}},
			{ID: "t.refused.v1", Tier: 2, Adapter: AnyAdapter, Sources: []Source{SourceStderr, SourceExit}, Code: CodeNetworkUnavailable, Confidence: "high", Scope: "network",
				Match: Match{Regex: `ECONNREFUSED`, In: []string{FieldStderr}}},
		},
	}
}

func mustCompileNoFixtures(t *testing.T, c Catalogue) *Engine {
	t.Helper()
	e, errs := compile(c)
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	return e
}

func TestClassify(t *testing.T) {
	e := mustCompileNoFixtures(t, testCatalogue())
	ant := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	for _, tt := range []struct {
		name     string
		ev       Evidence
		wantRule string
		wantCode string
		reason   string
	}{
		{"structured beats broad", Evidence{Source: SourceRPCError, Message: "API Error: 429 " + ant}, "t.overloaded.v1", CodeProviderOverloaded, ""},
		{"structured in data", Evidence{Source: SourceRPCError, Data: json.RawMessage(`{"details":` + ant + `}`)}, "t.overloaded.v1", CodeProviderOverloaded, ""},
		{"json inside a data string", Evidence{Source: SourceRPCError, Data: json.RawMessage(`{"message":` + strings.ReplaceAll(string(mustJSON(ant)), "", "") + `}`)}, "t.overloaded.v1", CodeProviderOverloaded, ""},
		{"fields must hold in one object", Evidence{Source: SourceRPCError, Data: json.RawMessage(`{"type":"error","x":{"error":{"type":"overloaded_error"}}}`)}, "", CodeUnclassified, ReasonNoMatch},
		{"broad", Evidence{Source: SourceRPCError, Message: "status 429"}, "t.broad_429.v1", CodeRateLimited, ""},
		{"source scoping", Evidence{Source: SourceMessageChunk, Message: "status 429"}, "", CodeUnclassified, ReasonNoMatch},
		{"adapter scoped rule fires for its adapter", Evidence{Source: SourceRPCError, Adapter: "codex-acp", RPCCode: intp(-32603), Data: json.RawMessage(`{"codex_error_info":"usage_limit_exceeded"}`)}, "t.codex_usage.v1", CodeQuotaLimited, ""},
		{"adapter alias", Evidence{Source: SourceRPCError, Adapter: "@zed-industries/codex-acp", RPCCode: intp(-32603), Data: json.RawMessage(`{"codexErrorInfo":"usage_limit_exceeded"}`)}, "t.codex_usage.v1", CodeQuotaLimited, ""},
		{"adapter scoped rule never fires for another adapter", Evidence{Source: SourceRPCError, Adapter: "gemini-cli", RPCCode: intp(-32603), Data: json.RawMessage(`{"codex_error_info":"usage_limit_exceeded"}`)}, "", CodeUnclassified, ReasonNoMatch},
		{"nor without an adapter", Evidence{Source: SourceRPCError, RPCCode: intp(-32603), Data: json.RawMessage(`{"codex_error_info":"usage_limit_exceeded"}`)}, "", CodeUnclassified, ReasonNoMatch},
		{"rpc code must match", Evidence{Source: SourceRPCError, Adapter: "codex-acp", RPCCode: intp(-32000), Data: json.RawMessage(`{"codex_error_info":"usage_limit_exceeded"}`)}, "", CodeUnclassified, ReasonNoMatch},
		{"prefix", Evidence{Source: SourceMessageChunk, Adapter: "cursor-agent", Message: " error: retriableerror: Connection stalled "}, "t.cursor.v1", CodeAgentTransportLost, ""},
		{"prefix veto", Evidence{Source: SourceMessageChunk, Adapter: "cursor-acp", Message: "Error: RetriableError: context canceled"}, "", CodeUnclassified, ReasonNoMatch},
		{"prefix empty suffix", Evidence{Source: SourceMessageChunk, Adapter: "cursor-acp", Message: "Error: RetriableError:\u00a0\u2003"}, "", CodeUnclassified, ReasonNoMatch},
		{"prefix suffix of 256 bytes", Evidence{Source: SourceMessageChunk, Adapter: "cursor-acp", Message: "Error: RetriableError: " + strings.Repeat("é", 128)}, "t.cursor.v1", CodeAgentTransportLost, ""},
		{"prefix suffix of 257 bytes", Evidence{Source: SourceMessageChunk, Adapter: "cursor-acp", Message: "Error: RetriableError: " + strings.Repeat("é", 128) + "x"}, "", CodeUnclassified, ReasonNoMatch},
		{"prose before the prefix", Evidence{Source: SourceMessageChunk, Adapter: "cursor-acp", Message: "so Error: RetriableError: x"}, "", CodeUnclassified, ReasonNoMatch},
		{"stderr field only", Evidence{Source: SourceExit, ExitCode: intp(1), Stderr: []string{"boot", "connect ECONNREFUSED 127.0.0.1:1"}}, "t.refused.v1", CodeNetworkUnavailable, ""},
		{"exit alone is unclassified", Evidence{Source: SourceExit, Signal: "SIGKILL"}, "", CodeUnclassified, ReasonNoMatch},
		{"stale", Evidence{Source: SourceRPCError, Message: ant, Stale: true}, "", CodeUnclassified, ReasonStale},
		{"conflict in the winning tier", Evidence{Source: SourceRPCError, Message: ant + ` {"error":{"type":"authentication_error"}}`}, "", CodeUnclassified, ReasonConflict},
		{"agent prose", Evidence{Source: SourceMessageChunk, Message: "the session died on rate limit, so I moved the card"}, "", CodeUnclassified, ReasonNoMatch},
	} {
		v := e.Classify(tt.ev)
		if v.Rule != tt.wantRule || v.Code != tt.wantCode || v.Reason != tt.reason {
			t.Errorf("%s: got (rule %q, code %s, reason %q), want (%q, %s, %q)", tt.name, v.Rule, v.Code, v.Reason, tt.wantRule, tt.wantCode, tt.reason)
		}
		if v.Class != ClassOf(v.Code) {
			t.Errorf("%s: got class %s for code %s, want %s", tt.name, v.Class, v.Code, ClassOf(v.Code))
		}
		if v.CatalogueVersion != "test-1" {
			t.Errorf("%s: got version %q, want test-1", tt.name, v.CatalogueVersion)
		}
		if v.Code == CodeUnclassified && v.Confidence != "low" {
			t.Errorf("%s: got confidence %q, want low", tt.name, v.Confidence)
		}
	}
}

func mustJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

func TestClassifyConflictNamesRules(t *testing.T) {
	e := mustCompileNoFixtures(t, testCatalogue())
	v := e.Classify(Evidence{Source: SourceRPCError, Message: `{"type":"error","error":{"type":"overloaded_error"}} {"error":{"type":"authentication_error"}}`})
	if got, want := strings.Join(v.Conflicts, ","), "t.overloaded.v1,t.auth.v1"; got != want {
		t.Errorf("got conflicts %q, want %q", got, want)
	}
}

func TestClassifyExcerpts(t *testing.T) {
	e := mustCompileNoFixtures(t, testCatalogue())
	for _, tt := range []struct {
		name string
		ev   Evidence
		want string
	}{
		{"prefix rule keeps the suffix", Evidence{Source: SourceMessageChunk, Adapter: "cursor-acp", Message: "Error: RetriableError: [unavailable] PING timed out"}, "[unavailable] PING timed out"},
		{"message redacted", Evidence{Source: SourceRPCError, Message: "429 for alice@example.com"}, "429 for [redacted-email]"},
		{"last stderr line", Evidence{Source: SourceExit, Stderr: []string{"a", "connect ECONNREFUSED /home/bob/x", ""}}, "connect ECONNREFUSED ~/x"},
		{"signal", Evidence{Source: SourceExit, Signal: "SIGKILL"}, "agent killed by signal SIGKILL"},
		{"exit code", Evidence{Source: SourceExit, ExitCode: intp(3)}, "agent exited with code 3"},
	} {
		if got := e.Classify(tt.ev).SafeExcerpt; got != tt.want {
			t.Errorf("%s: got excerpt %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestClassifyTiming(t *testing.T) {
	e := mustCompileNoFixtures(t, testCatalogue())
	v := e.Classify(Evidence{Source: SourceHTTP, Now: pinned, Headers: map[string]string{"Retry-After": "12"},
		Data: json.RawMessage(`{"type":"error","error":{"type":"overloaded_error"}}`)})
	if v.RetryAfter == nil || v.RetryAfter.Seconds() != 12 {
		t.Errorf("got retryAfter %v, want 12s", v.RetryAfter)
	}
	// Timing extractors are per rule: the broad rule has none.
	v = e.Classify(Evidence{Source: SourceRPCError, Now: pinned, Message: "429, try again in 20s"})
	if v.RetryAfter != nil {
		t.Errorf("got retryAfter %v, want none", *v.RetryAfter)
	}
}

func TestClassifyBoundedInput(t *testing.T) {
	e := mustCompileNoFixtures(t, testCatalogue())
	// A signature beyond the scan bound is not seen.
	huge := strings.Repeat("x", MaxScanBytes) + " 429"
	if v := e.Classify(Evidence{Source: SourceRPCError, Message: huge}); v.Code != CodeUnclassified {
		t.Errorf("got %s, want unclassified (signature beyond the scan bound)", v.Code)
	}
	// Recent stderr is kept, old stderr dropped.
	lines := []string{"connect ECONNREFUSED"}
	for range 2000 {
		lines = append(lines, strings.Repeat("y", 100))
	}
	if v := e.Classify(Evidence{Source: SourceStderr, Stderr: lines}); v.Code != CodeUnclassified {
		t.Errorf("got %s, want unclassified (old stderr beyond the bound)", v.Code)
	}
	lines = append(lines, "connect ECONNREFUSED")
	if v := e.Classify(Evidence{Source: SourceStderr, Stderr: lines}); v.Code != CodeNetworkUnavailable {
		t.Errorf("got %s, want network_unavailable", v.Code)
	}
	if v := e.Classify(Evidence{Source: SourceStderr, Stderr: []string{strings.Repeat("z", 2*MaxScanBytes) + "ECONNREFUSED"}}); v.Code != CodeNetworkUnavailable {
		t.Errorf("one huge line: got %s, want network_unavailable (its tail is kept)", v.Code)
	}
}

func TestClassifyDeterministic(t *testing.T) {
	e := mustCompileNoFixtures(t, testCatalogue())
	ev := Evidence{Source: SourceRPCError, Message: `{"b":{"error":{"type":"authentication_error"}},"a":{"type":"error","error":{"type":"overloaded_error"}}}`}
	first := e.Classify(ev)
	for range 50 {
		if got := e.Classify(ev); got.Reason != first.Reason || strings.Join(got.Conflicts, ",") != strings.Join(first.Conflicts, ",") {
			t.Fatalf("got %+v, want %+v", got, first)
		}
	}
}

func TestCompileRejects(t *testing.T) {
	ok := Rule{ID: "x.y.v1", Tier: 2, Adapter: AnyAdapter, Sources: []Source{SourceRPCError}, Code: CodeRateLimited, Confidence: "high", Scope: "provider", Match: Match{Regex: "x"}}
	for _, tt := range []struct {
		name   string
		mutate func(*Rule)
		want   string
	}{
		{"bad id", func(r *Rule) { r.ID = "Nope" }, "vendor.signature.vN"},
		{"tier", func(r *Rule) { r.Tier = 5 }, "tier 5"},
		{"adapter", func(r *Rule) { r.Adapter = "aider" }, `adapter "aider"`},
		{"no sources", func(r *Rule) { r.Sources = nil }, "sources"},
		{"source", func(r *Rule) { r.Sources = []Source{"mail"} }, `unknown source "mail"`},
		{"code without class", func(r *Rule) { r.Code = "space_weather" }, `code "space_weather" has no class`},
		{"unclassified code", func(r *Rule) { r.Code = CodeUnclassified }, "has no class"},
		{"low confidence", func(r *Rule) { r.Confidence = "low" }, "confidence"},
		{"scope", func(r *Rule) { r.Scope = "galaxy" }, "scope"},
		{"timing", func(r *Rule) { r.Timing = []string{"astrology"} }, "astrology"},
		{"regex", func(r *Rule) { r.Match.Regex = "(?<=x)" }, "match.regex"},
		{"backreference is not RE2", func(r *Rule) { r.Match.Regex = `(a)\1` }, "match.regex"},
		{"veto", func(r *Rule) { r.Veto = []string{"("} }, "veto[0]"},
		{"no condition", func(r *Rule) { r.Match = Match{} }, "no condition"},
		{"literal alone", func(r *Rule) { r.Match = Match{Literal: "x", RPCCode: intp(1)} }, "literal without"},
		{"field path", func(r *Rule) { r.Match = Match{Fields: []FieldMatch{{Path: ""}}} }, "empty path"},
		{"prefix", func(r *Rule) { r.Match = Match{Prefix: &PrefixMatch{Prefix: " "}} }, "prefix"},
		{"in", func(r *Rule) { r.Match.In = []string{"headers"} }, `unknown field "headers"`},
	} {
		r := ok
		r.Match = Match{Regex: "x"}
		tt.mutate(&r)
		_, err := Compile(Catalogue{Version: "v", Rules: []Rule{r}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	_, err := Compile(Catalogue{Version: "v", Rules: []Rule{ok, ok}})
	if err == nil || !strings.Contains(err.Error(), "duplicate id") {
		t.Errorf("duplicate: got %v, want duplicate id", err)
	}
	_, err = Compile(Catalogue{Rules: []Rule{ok}})
	if err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("version: got %v, want a version error", err)
	}
}

func fixture(rule string, match bool, ev string) Fixture {
	return Fixture{Rule: rule, Match: match, Evidence: json.RawMessage(ev)}
}

func TestLintAndTest(t *testing.T) {
	c := Catalogue{Version: "v", Rules: []Rule{
		{ID: "a.wide.v1", Tier: 2, Adapter: AnyAdapter, Sources: []Source{SourceRPCError}, Code: CodeRateLimited, Confidence: "high", Scope: "provider", Match: Match{Regex: "limit"}},
		{ID: "a.narrow.v1", Tier: 2, Adapter: AnyAdapter, Sources: []Source{SourceRPCError}, Code: CodeRateLimited, Confidence: "high", Scope: "provider", Match: Match{Regex: "rate limit"}},
		{ID: "a.lonely.v1", Tier: 3, Adapter: AnyAdapter, Sources: []Source{SourceRPCError}, Code: CodeQuotaLimited, Confidence: "high", Scope: "account", Match: Match{Regex: "quota limit"}},
	}, Fixtures: []Fixture{
		fixture("a.wide.v1", true, `{"source":"rpc_error","message":"limit"}`),
		fixture("a.wide.v1", false, `{"source":"rpc_error","message":"nothing"}`),
		fixture("a.narrow.v1", true, `{"source":"rpc_error","message":"rate limit"}`),       // won by a.wide.v1: unreachable
		fixture("a.lonely.v1", true, `{"source":"rpc_error","message":"quota limit"}`),      // won by tier 2
		fixture("a.wide.v1", true, `{"source":"rpc_error","message":"rate limit reached"}`), // narrow collides
		fixture("a.ghost.v1", true, `{"source":"rpc_error"}`),
		fixture("a.wide.v1", true, `{"source":"rpc_error","mesage":"typo"}`),
	}}
	got := map[string]bool{}
	for _, f := range Lint(c) {
		got[f.String()] = true
	}
	for _, want := range []string{
		`rule "a.narrow.v1": unreachable: no positive fixture is classified by this rule`,
		`rule "a.narrow.v1": no negative fixture`,
		`rule "a.lonely.v1": unreachable: no positive fixture is classified by this rule`,
		`fixture "#5 (a.ghost.v1)": names unknown rule "a.ghost.v1"`,
		`fixture "#6 (a.wide.v1)": evidence: json: unknown field "mesage"`,
		// a.wide.v1 says rate_limited (transient) on a.lonely.v1's quota
		// fixture (hard): a wrong class waiting to happen.
		`fixture "#3 (a.lonely.v1)": can classify fixture "#3 (a.lonely.v1)" of rule "a.lonely.v1" as rate_limited (class transient, the fixture's is hard): declare which rule is more specific (outranks, with this fixture as the collision fixture), add a veto, or mark the broader rule general`,
	} {
		if !got[want] {
			t.Errorf("Lint: missing finding %q; got %v", want, got)
		}
	}
	if _, err := Compile(c); err == nil {
		t.Errorf("Compile: got nil error for a catalogue with lint findings")
	}

	e := mustCompileNoFixtures(t, c)
	rep := e.Test()
	if rep.OK() {
		t.Fatalf("Test: got OK, want failures")
	}
	byRule := map[string]RuleReport{}
	for _, r := range rep.Rules {
		byRule[r.Rule] = r
	}
	if f := byRule["a.wide.v1"].Failures; len(f) != 2 || !strings.Contains(f[0], `collision: rule "a.narrow.v1"`) || !strings.Contains(f[1], "unknown field") {
		t.Errorf("a.wide.v1: got failures %q, want a collision and an evidence error", f)
	}
	if f := byRule["a.narrow.v1"].Failures; len(f) != 1 || !strings.Contains(f[0], `got rule "a.wide.v1"`) {
		t.Errorf("a.narrow.v1: got failures %q", f)
	}
}

func TestCodeRegistry(t *testing.T) {
	want := map[Class][]string{
		ClassTransient:    {"network_unavailable", "provider_unavailable", "provider_overloaded", "model_capacity", "rate_limited", "agent_transport_lost", "empty_response"},
		ClassHard:         {"quota_limited", "subscription_required", "auth_required", "missing_credentials", "provider_not_configured", "model_unavailable"},
		ClassRequest:      {"context_overflow", "invalid_request", "content_refused", "max_tokens", "max_turn_requests"},
		ClassUnclassified: {"unclassified", "agent_stalled"},
	}
	n := 0
	for class, codes := range want {
		for _, c := range codes {
			n++
			if got := ClassOf(c); got != class {
				t.Errorf("ClassOf(%s): got %s, want %s", c, got, class)
			}
		}
	}
	if got := len(Codes()); got != n {
		t.Errorf("got %d codes, want %d: every code must have exactly one class", got, n)
	}
	if got := ClassOf("made_up"); got != ClassUnclassified {
		t.Errorf("ClassOf(made_up): got %s, want unclassified", got)
	}
}

func TestNormalizeAdapter(t *testing.T) {
	for in, want := range map[string]string{
		"cursor-agent": "cursor-acp", "cursor_acp": "cursor-acp", "@zed-industries/claude-agent-acp": "claude-agent-acp",
		"claude-code-acp": "claude-agent-acp", "gemini": "gemini-cli", " Codex-ACP ": "codex-acp", "other": "other",
		"@earendil-works/pi-coding-agent": "pi-acp", "pi": "pi-acp", "Cline": "cline",
	} {
		if got := NormalizeAdapter(in); got != want {
			t.Errorf("NormalizeAdapter(%q): got %q, want %q", in, got, want)
		}
	}
}
