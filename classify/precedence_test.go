package classify

import (
	"strings"
	"testing"
	"time"
)

// precedenceCatalogue has one pair of rules per precedence question:
// equal-rank rules that agree on the class, that disagree, an adapter-
// scoped signature against a generic one, and a declared Outranks.
func precedenceCatalogue() Catalogue {
	rule := func(id string, tier int, adapter, code, re string, outranks ...string) Rule {
		return Rule{ID: id, Tier: tier, Adapter: adapter, Sources: []Source{SourceRPCError, SourceStderr}, Code: code,
			Confidence: "high", Scope: "provider", Match: Match{Regex: re}, Outranks: outranks}
	}
	return Catalogue{Version: "p-1", Rules: []Rule{
		// Same class (transient), different codes, same rank.
		rule("p.stream.v1", 2, AnyAdapter, CodeAgentTransportLost, `stream disconnected`),
		rule("p.dns.v1", 2, AnyAdapter, CodeNetworkUnavailable, `dns error`),
		// Different classes, same rank.
		rule("p.quota.v1", 2, AnyAdapter, CodeQuotaLimited, `quota`),
		rule("p.slow.v1", 2, AnyAdapter, CodeRateLimited, `slow down`),
		// Adapter-scoped signature over a generic one of the same tier.
		rule("p.generic_auth.v1", 2, AnyAdapter, CodeAuthRequired, `auth failed`),
		rule("p.codex_auth.v1", 2, "codex-acp", CodeMissingCredentials, `auth failed: no key`),
		// A declared specificity decides between different classes.
		rule("p.refused.v1", 2, AnyAdapter, CodeContentRefused, `refused`),
		rule("p.refused_conn.v1", 2, AnyAdapter, CodeNetworkUnavailable, `connection refused`, "p.refused.v1"),
		// Structured over everything.
		{ID: "p.typed.v1", Tier: 1, Adapter: AnyAdapter, Sources: []Source{SourceHTTP, SourceRPCError}, Code: CodeInvalidRequest, Confidence: "high", Scope: "request",
			Match: Match{Regex: `invalid_request_error`}},
		rule("p.broad.v1", 3, AnyAdapter, CodeProviderUnavailable, `bad request`),
		{ID: "p.status.v1", Tier: 4, Adapter: AnyAdapter, Sources: []Source{SourceHTTP}, Code: CodeInvalidRequest, Confidence: "medium", Scope: "request",
			Match: Match{HTTPStatus: []int{400}}},
		// A general typed code (one that restates a status) and a specific
		// phrase of another class: the phrase refines it.
		{ID: "p.typed_limit.v1", Tier: 1, Adapter: AnyAdapter, Sources: []Source{SourceRPCError}, Code: CodeRateLimited, Confidence: "high", Scope: "provider",
			Match: Match{Regex: `rate_limit_error`}, General: true},
		rule("p.plan.v1", 3, AnyAdapter, CodeSubscriptionRequired, `(?i)extra usage is required`),
	}}
}

func TestPrecedence(t *testing.T) {
	e := mustCompileNoFixtures(t, precedenceCatalogue())
	for _, tt := range []struct {
		name      string
		ev        Evidence
		wantRule  string
		wantCode  string
		conflicts string
	}{
		{"agreeing class never unclassified: first in catalogue order wins",
			Evidence{Source: SourceRPCError, Message: "stream disconnected", Stderr: []string{"dns error"}}, "p.stream.v1", CodeAgentTransportLost, ""},
		{"agreeing class, order of the text does not matter",
			Evidence{Source: SourceRPCError, Message: "dns error; stream disconnected"}, "p.stream.v1", CodeAgentTransportLost, ""},
		{"the agent's own report outranks its stderr",
			Evidence{Source: SourceRPCError, Message: "dns error", Stderr: []string{"stream disconnected"}}, "p.dns.v1", CodeNetworkUnavailable, ""},
		{"stderr speaks when the report says nothing",
			Evidence{Source: SourceRPCError, Message: "Internal error", Stderr: []string{"quota"}}, "p.quota.v1", CodeQuotaLimited, ""},
		{"different classes at equal rank: conflict naming both",
			Evidence{Source: SourceRPCError, Message: "quota; slow down"}, "", CodeUnclassified, "p.quota.v1,p.slow.v1"},
		{"adapter-scoped signature outranks the generic one",
			Evidence{Source: SourceRPCError, Adapter: "codex-acp", Message: "auth failed: no key"}, "p.codex_auth.v1", CodeMissingCredentials, ""},
		{"for another adapter the generic one applies",
			Evidence{Source: SourceRPCError, Adapter: "gemini-cli", Message: "auth failed: no key"}, "p.generic_auth.v1", CodeAuthRequired, ""},
		{"declared specificity decides between classes",
			Evidence{Source: SourceRPCError, Message: "connection refused"}, "p.refused_conn.v1", CodeNetworkUnavailable, ""},
		{"a status alone decides",
			Evidence{Source: SourceHTTP, HTTPStatus: 400, Message: "no words"}, "p.status.v1", CodeInvalidRequest, ""},
		{"a typed code and a phrase of another class, neither declared the more specific: conflict",
			Evidence{Source: SourceRPCError, Message: "invalid_request_error: bad request"}, "", CodeUnclassified, "p.typed.v1,p.broad.v1"},
		{"a general typed code is refined by a specific phrase of another class",
			Evidence{Source: SourceRPCError, Message: "rate_limit_error: Extra usage is required for long context requests"}, "p.plan.v1", CodeSubscriptionRequired, ""},
		{"a general typed code alone decides",
			Evidence{Source: SourceRPCError, Message: "rate_limit_error: slow"}, "p.typed_limit.v1", CodeRateLimited, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := e.Classify(tt.ev)
			if v.Rule != tt.wantRule || v.Code != tt.wantCode {
				t.Fatalf("got rule %q code %s (reason %q, conflicts %v), want rule %q code %s", v.Rule, v.Code, v.Reason, v.Conflicts, tt.wantRule, tt.wantCode)
			}
			if got := strings.Join(v.Conflicts, ","); got != tt.conflicts {
				t.Errorf("conflicts %q, want %q", got, tt.conflicts)
			}
			if tt.conflicts != "" && v.Reason != ReasonConflict {
				t.Errorf("reason %q, want %q", v.Reason, ReasonConflict)
			}
		})
	}
}

func TestOutranksChecked(t *testing.T) {
	c := precedenceCatalogue()
	c.Rules[0].Outranks = []string{"p.ghost.v1"}        // unknown
	c.Rules[1].Outranks = []string{"p.status.v1"}       // a status rule
	c.Rules[2].Outranks = []string{"p.slow.v1"}         // mutual …
	c.Rules[3].Outranks = []string{"p.quota.v1"}        // … outranking
	c.Rules[4].Outranks = []string{"p.generic_auth.v1"} // itself
	_, errs := compile(c)
	joined := strings.Join(errs, "\n")
	for _, want := range []string{
		`rule "p.stream.v1": outranks unknown rule "p.ghost.v1"`,
		`rule "p.dns.v1": outranks status rule "p.status.v1"`,
		`rule "p.quota.v1": outranks "p.slow.v1", which outranks it`,
		`rule "p.generic_auth.v1": outranks[0]: a rule cannot outrank itself`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing error %q in:\n%s", want, joined)
		}
	}
}

func TestOutranksNeedsCollisionFixture(t *testing.T) {
	c := precedenceCatalogue()
	find := func(fs []Finding) bool {
		for _, f := range fs {
			if f.Rule == "p.refused_conn.v1" && strings.Contains(f.Problem, `outranks "p.refused.v1" without a collision fixture`) {
				return true
			}
		}
		return false
	}
	c.Fixtures = []Fixture{fixture("p.refused_conn.v1", true, `{"source":"stderr","stderr":["ECONNREFUSED connection refused?"]}`)}
	c.Rules[7].Match.Regex = `connection refused|ECONNREFUSED`
	c.Fixtures[0].Evidence = []byte(`{"source":"stderr","stderr":["ECONNREFUSED"]}`)
	if !find(Lint(c)) {
		t.Errorf("Lint: want a missing-collision-fixture finding when no positive fixture matches both rules")
	}
	c.Fixtures[0].Evidence = []byte(`{"source":"stderr","stderr":["connection refused"]}`)
	if find(Lint(c)) {
		t.Errorf("Lint: the collision fixture is there, yet the finding remains")
	}
	// A positive fixture that another same-rank rule also matches, without
	// a declaration, fails Test even when the classes agree.
	c.Fixtures = append(c.Fixtures, fixture("p.stream.v1", true, `{"source":"rpc_error","message":"stream disconnected; dns error"}`))
	e := mustCompileNoFixtures(t, c)
	var failures []string
	for _, r := range e.Test().Rules {
		failures = append(failures, r.Failures...)
	}
	if got := strings.Join(failures, "\n"); !strings.Contains(got, `collision: rule "p.dns.v1" of the same rank also matches`) {
		t.Errorf("Test: want an undeclared collision failure, got %q", got)
	}
}

// layerCatalogue has one rule per layer question: an ordered phrase tier,
// a status tier, a phrase that may change a status's class and one that
// may not.
func layerCatalogue() Catalogue {
	phrase := func(id, code, re string, overrides ...int) Rule {
		return Rule{ID: id, Tier: TierPhrase, Adapter: AnyAdapter, Sources: []Source{SourceRPCError, SourceStderr}, Code: code,
			Confidence: "high", Scope: "provider", Match: Match{Regex: re}, OverridesStatus: overrides, Timing: []string{TimingText}}
	}
	status := func(id, code string, st ...int) Rule {
		return Rule{ID: id, Tier: TierStatus, Adapter: AnyAdapter, Sources: []Source{SourceRPCError, SourceStderr, SourceHTTP}, Code: code,
			Confidence: "medium", Scope: "provider", Match: Match{HTTPStatus: st}, Timing: []string{TimingHeaders, TimingText}}
	}
	return Catalogue{Version: "l-1", Rules: []Rule{
		func() Rule {
			r := phrase("l.daily.v1", CodeQuotaLimited, `daily quota exceeded`, 429)
			r.Outranks = []string{"l.rate.v1"}
			return r
		}(),
		phrase("l.quota.v1", CodeQuotaLimited, `quota exceeded`),
		phrase("l.rate.v1", CodeRateLimited, `rate limit exceeded|quota exceeded`),
		// l.daily.v1 says the window; it outranks the plain limit.
		phrase("l.dns.v1", CodeNetworkUnavailable, `dns error`),
		phrase("l.auth.v1", CodeAuthRequired, `invalid key`),
		phrase("l.stream.v1", CodeAgentTransportLost, `stream disconnected`),
		status("l.s429.v1", CodeRateLimited, 429),
		status("l.s500.v1", CodeProviderUnavailable, 500),
	}}
}

func TestLayers(t *testing.T) {
	e := mustCompileNoFixtures(t, layerCatalogue())
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name      string
		ev        Evidence
		wantRule  string
		wantCode  string
		conflicts string
	}{
		{"phrase tier: two kinds of different classes, neither declared the more specific, conflict",
			Evidence{Source: SourceRPCError, Message: "quota exceeded"}, "", CodeUnclassified, "l.quota.v1,l.rate.v1"},
		{"phrase tier: the first rule in catalogue order wins among kinds of one class",
			Evidence{Source: SourceRPCError, Message: "dns error; stream disconnected"}, "l.dns.v1", CodeNetworkUnavailable, ""},
		{"a status alone decides",
			Evidence{Source: SourceRPCError, Message: "Error code: 429"}, "l.s429.v1", CodeRateLimited, ""},
		{"a phrase refines the code within the status's class",
			Evidence{Source: SourceRPCError, HTTPStatus: 500, Message: "stream disconnected"}, "l.stream.v1", CodeAgentTransportLost, ""},
		{"a phrase changes the class of a status it declares",
			Evidence{Source: SourceRPCError, HTTPStatus: 429, Message: "daily quota exceeded"}, "l.daily.v1", CodeQuotaLimited, ""},
		{"a phrase that does not declare the status conflicts with it",
			Evidence{Source: SourceRPCError, HTTPStatus: 429, Message: "invalid key"}, "", CodeUnclassified, "l.auth.v1,l.s429.v1"},
		{"stderr decides when the report says nothing",
			Evidence{Source: SourceRPCError, Message: "Internal error", Stderr: []string{"dns error"}}, "l.dns.v1", CodeNetworkUnavailable, ""},
		{"stderr refines a phrase within its class",
			Evidence{Source: SourceRPCError, Message: "stream disconnected", Stderr: []string{"dns error"}}, "l.dns.v1", CodeNetworkUnavailable, ""},
		{"stderr never changes the report's class",
			Evidence{Source: SourceRPCError, Message: "stream disconnected", Stderr: []string{"quota exceeded"}}, "l.stream.v1", CodeAgentTransportLost, ""},
		{"the agent's retry notes do not refine",
			Evidence{Source: SourceRPCError, Message: "Error code: 500", Stderr: []string{"stream disconnected - retrying (1/5 in 200ms)"}}, "l.s500.v1", CodeProviderUnavailable, ""},
		{"a rate limit lifting within the hour stays a rate limit",
			Evidence{Source: SourceRPCError, Message: "rate limit exceeded, try again in 30m"}, "l.rate.v1", CodeRateLimited, ""},
		{"a rate limit lifting after an hour or more is a quota",
			Evidence{Source: SourceRPCError, Message: "rate limit exceeded, try again in 58 hours"}, "l.rate.v1", CodeQuotaLimited, ""},
		{"a bare 429 whose Retry-After is a day away is a quota",
			Evidence{Source: SourceHTTP, HTTPStatus: 429, Headers: map[string]string{"Retry-After": "86400"}}, "l.s429.v1", CodeQuotaLimited, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.ev.Now = now
			v := e.Classify(tt.ev)
			if v.Rule != tt.wantRule || v.Code != tt.wantCode {
				t.Fatalf("got rule %q code %s (reason %q, conflicts %v), want rule %q code %s", v.Rule, v.Code, v.Reason, v.Conflicts, tt.wantRule, tt.wantCode)
			}
			if v.Class != ClassOf(v.Code) {
				t.Errorf("class %s does not follow code %s", v.Class, v.Code)
			}
			if got := strings.Join(v.Conflicts, ","); got != tt.conflicts {
				t.Errorf("conflicts %q, want %q", got, tt.conflicts)
			}
		})
	}
}

func TestOverridesStatusNeedsCollisionFixture(t *testing.T) {
	c := layerCatalogue()
	c.Fixtures = []Fixture{fixture("l.daily.v1", true, `{"source":"rpc_error","message":"daily quota exceeded"}`)}
	has := func() bool {
		for _, f := range Lint(c) {
			if f.Rule == "l.daily.v1" && strings.Contains(f.Problem, "overridesStatus 429 without a collision fixture") {
				return true
			}
		}
		return false
	}
	if !has() {
		t.Error("Lint: want a missing-collision-fixture finding for overridesStatus 429")
	}
	c.Fixtures[0].Evidence = []byte(`{"source":"rpc_error","httpStatus":429,"message":"daily quota exceeded"}`)
	if has() {
		t.Error("Lint: the collision fixture is there, yet the finding remains")
	}
}

// TestMentionIsNotTheError: the same words as a report and as prose that
// only mentions them (mention.go). The report classifies; the mention does
// not, unless it carries an error's shape (a status field, an error body,
// an error head).
func TestMentionIsNotTheError(t *testing.T) {
	c := layerCatalogue()
	e := mustCompileNoFixtures(t, c)
	for _, tt := range []struct {
		name string
		ev   Evidence
		want string
	}{
		{"a statement of the failure", Evidence{Source: SourceRPCError, Message: "rate limit exceeded, try again in 20s"}, CodeRateLimited},
		{"a conditional about it", Evidence{Source: SourceRPCError, Message: "If you get 'rate limit exceeded', lower the concurrency."}, CodeUnclassified},
		{"an explanation of it", Evidence{Source: SourceRPCError, Message: "The 'quota exceeded' message usually means the plan ran out."}, CodeUnclassified},
		{"a first-person account", Evidence{Source: SourceStderr, Stderr: []string{"I got rate limit exceeded twice, then it worked"}}, CodeUnclassified},
		{"a code comment", Evidence{Source: SourceRPCError, Message: "// retry when the stream disconnected"}, CodeUnclassified},
		{"a status in prose", Evidence{Source: SourceRPCError, Message: "When the API returns 500 Internal Server Error we back off"}, CodeUnclassified},
		{"a test assertion", Evidence{Source: SourceStderr, Stderr: []string{"AssertionError: expected error to be 'rate limit exceeded'"}}, CodeUnclassified},
		{"an error head makes prose-like words a report", Evidence{Source: SourceRPCError, Message: "Error: rate limit exceeded. If you get this repeatedly, lower the concurrency."}, CodeRateLimited},
		{"a status field makes it a report", Evidence{Source: SourceRPCError, HTTPStatus: 500, Message: "I got stream disconnected"}, CodeAgentTransportLost},
		{"a hint after the statement is the provider's own", Evidence{Source: SourceRPCError, Message: "rate limit exceeded. If you are seeing this often, contact support."}, CodeRateLimited},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.ev.Now = DefaultFixtureNow
			if v := e.Classify(tt.ev); v.Code != tt.want {
				t.Errorf("got %s by %q (reason %q), want %s", v.Code, v.Rule, v.Reason, tt.want)
			}
		})
	}
}

// TestEvidenceRank: the agent's report outranks its error text in chunks,
// which outranks stderr; a lower rank refines only a phrase or status
// verdict, within its class and its kind.
func TestEvidenceRank(t *testing.T) {
	rule := func(id, code, re string) Rule {
		return Rule{ID: id, Tier: TierPhrase, Adapter: AnyAdapter, Sources: []Source{SourceRPCError, SourceStderr, SourceMessageChunk, SourceExit},
			Code: code, Confidence: "medium", Scope: "provider", Match: Match{Regex: re}}
	}
	e := mustCompileNoFixtures(t, Catalogue{Version: "r-1", Rules: []Rule{
		rule("r.dns.v1", CodeNetworkUnavailable, `ENOTFOUND`), // the more specific first, as in the phrase table
		rule("r.stream.v1", CodeAgentTransportLost, `stream disconnected`),
		rule("r.overloaded.v1", CodeProviderOverloaded, `overloaded`),
		rule("r.server.v1", CodeProviderUnavailable, `Error: 5\d\d`),
		rule("r.rate.v1", CodeRateLimited, `Error: 429`),
	}})
	telemetry := []string{"export failed: getaddrinfo ENOTFOUND telemetry.example.dev"}
	internal := "Internal error: Agent error"
	for _, tt := range []struct {
		name    string
		ev      Evidence
		rule    string
		excerpt string
	}{
		{"the report decides; a DNS line does not refine a provider's answer",
			Evidence{Source: SourceRPCError, Message: internal, Data: []byte(`{"details":"Error: 500 {}"}`), Stderr: telemetry},
			"r.server.v1", "Error: 500 {}"},
		{"the chunk speaks when the report does not",
			Evidence{Source: SourceRPCError, Message: internal, Chunk: "Error: 429 slow down", Stderr: telemetry},
			"r.rate.v1", "Error: 429 slow down"},
		{"the chunk refines the report within its class and kind",
			Evidence{Source: SourceRPCError, Message: "Error: 503", Chunk: "the model is overloaded"},
			"r.overloaded.v1", ""},
		{"stderr decides only when nothing above speaks",
			Evidence{Source: SourceRPCError, Message: internal, Chunk: "Error: something odd", Stderr: telemetry},
			"r.dns.v1", ""},
		{"stderr refines a connection failure into a connection failure",
			Evidence{Source: SourceRPCError, Message: "stream disconnected", Stderr: []string{"getaddrinfo ENOTFOUND api.example.com"}},
			"r.dns.v1", ""},
		{"a chunk is not refined by stderr of another kind",
			Evidence{Source: SourceRPCError, Message: internal, Chunk: "Error: 502 bad gateway", Stderr: telemetry},
			"r.server.v1", "Error: 502 bad gateway"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := e.Classify(tt.ev)
			if v.Rule != tt.rule {
				t.Fatalf("rule %q (code %s, excerpt %q), want %q", v.Rule, v.Code, v.SafeExcerpt, tt.rule)
			}
			if tt.excerpt != "" && v.SafeExcerpt != tt.excerpt {
				t.Errorf("safeExcerpt %q, want %q", v.SafeExcerpt, tt.excerpt)
			}
		})
	}
}
