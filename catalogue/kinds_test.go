package catalogue

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/classify"
)

// kindPairs are the kinds of failure that must never be mistaken for each
// other (docs/CATALOGUE.md "Kinds"). Each side is a code, or a rule where
// both kinds share a code (TLS and connection failures are both
// network_unavailable, told apart by the rule that decides).
var kindPairs = []struct {
	name string
	a, b string
}{
	{"rate-vs-quota", classify.CodeRateLimited, classify.CodeQuotaLimited},
	{"rate-vs-plan", classify.CodeSubscriptionRequired, classify.CodeRateLimited},
	{"configuration-vs-bad-request", classify.CodeProviderNotConfigured, classify.CodeInvalidRequest},
	{"model-vs-credentials", classify.CodeModelUnavailable, classify.CodeAuthRequired},
	{"key-variable-vs-configuration", classify.CodeMissingCredentials, classify.CodeProviderNotConfigured},
	{"transport-vs-provider", classify.CodeAgentTransportLost, classify.CodeProviderUnavailable},
	{"tls-vs-connection", "phrase.tls.v1", "phrase.network.v1"},
	{"server-vs-model", classify.CodeModelUnavailable, classify.CodeProviderUnavailable},
	// Learned from holdout6's misses (docs/CATALOGUE.md "holdout6").
	{"plan-vs-model", classify.CodeSubscriptionRequired, classify.CodeModelUnavailable},
	{"billing-vs-credentials", classify.CodeQuotaLimited, classify.CodeAuthRequired},
	{"credentials-vs-bad-request", classify.CodeMissingCredentials, classify.CodeInvalidRequest},
	{"configuration-vs-model", classify.CodeProviderNotConfigured, classify.CodeModelUnavailable},
	{"model-vs-bad-request", classify.CodeModelUnavailable, classify.CodeInvalidRequest},
	{"request-vs-refusal", classify.CodeInvalidRequest, classify.CodeContentRefused},
	{"connection-vs-bad-request", classify.CodeNetworkUnavailable, classify.CodeInvalidRequest},
	// Learned from holdout7's misses (docs/CATALOGUE.md "holdout7").
	{"load-vs-capacity", classify.CodeProviderOverloaded, classify.CodeModelCapacity},
	// Learned from holdout9's misses (docs/CATALOGUE.md "holdout9").
	{"permission-vs-credentials", classify.CodeProviderNotConfigured, classify.CodeAuthRequired},
	{"phase-before-vs-after", classify.CodeNetworkUnavailable, classify.CodeAgentTransportLost},
	// Learned from holdout10's misses (docs/CATALOGUE.md "holdout10").
	{"placement-vs-capacity", classify.CodeModelUnavailable, classify.CodeModelCapacity},
	{"allowance-vs-plan", classify.CodeQuotaLimited, classify.CodeSubscriptionRequired},
	{"transport-vs-configuration", classify.CodeProviderNotConfigured, classify.CodeAgentTransportLost},
}

// TestKindCollisions: every kind pair has collision fixtures in both
// directions (fixtures named "kinds <pair> → <side>: …", evidence that
// carries the other kind's words), and each is classified as its side.
// TestFixtures runs them as fixtures too; this test is the inventory.
func TestKindCollisions(t *testing.T) {
	c, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	e := Default()
	for _, p := range kindPairs {
		t.Run(p.name, func(t *testing.T) {
			seen := map[string]int{}
			for _, f := range c.Fixtures {
				rest, ok := strings.CutPrefix(f.Name, "kinds "+p.name+" → ")
				if !ok {
					continue
				}
				side, _, _ := strings.Cut(rest, ":")
				if side != p.a && side != p.b {
					t.Errorf("fixture %q: side %q is neither %q nor %q", f.Name, side, p.a, p.b)
					continue
				}
				if !f.Match {
					t.Errorf("fixture %q: a collision fixture is a positive one", f.Name)
				}
				var ev classify.Evidence
				if err := json.Unmarshal(f.Evidence, &ev); err != nil {
					t.Fatalf("fixture %q: %v", f.Name, err)
				}
				ev.Now = classify.DefaultFixtureNow
				v := e.Classify(ev)
				if v.Code != side && v.Rule != side {
					t.Errorf("fixture %q: got %s by %q (reason %q %v), want %s", f.Name, v.Code, v.Rule, v.Reason, v.Conflicts, side)
				}
				seen[side]++
			}
			for _, side := range []string{p.a, p.b} {
				if seen[side] == 0 {
					t.Errorf("no collision fixture \"kinds %s → %s: …\"", p.name, side)
				}
			}
		})
	}
}
