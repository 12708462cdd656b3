package classify

import (
	"strings"
	"testing"
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
		{ID: "p.status.v1", Tier: 1, Adapter: AnyAdapter, Sources: []Source{SourceHTTP}, Code: CodeInvalidRequest, Confidence: "high", Scope: "request",
			Match: Match{HTTPStatus: []int{400}}},
		rule("p.broad.v1", 3, AnyAdapter, CodeProviderUnavailable, `bad request`),
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
		{"structured field outranks text",
			Evidence{Source: SourceHTTP, HTTPStatus: 400, Message: "bad request"}, "p.status.v1", CodeInvalidRequest, ""},
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
	c.Rules[1].Outranks = []string{"p.status.v1"}       // another rank
	c.Rules[2].Outranks = []string{"p.slow.v1"}         // mutual …
	c.Rules[3].Outranks = []string{"p.quota.v1"}        // … outranking
	c.Rules[4].Outranks = []string{"p.generic_auth.v1"} // itself
	_, errs := compile(c)
	joined := strings.Join(errs, "\n")
	for _, want := range []string{
		`rule "p.stream.v1": outranks unknown rule "p.ghost.v1"`,
		`rule "p.dns.v1": outranks "p.status.v1" of another rank`,
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
