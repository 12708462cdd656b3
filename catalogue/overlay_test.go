package catalogue_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/classify"
)

func drained(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/overlay-drained.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var drainedEvidence = classify.Evidence{Source: classify.SourceRPCError, Message: "Internal error",
	Data: json.RawMessage(`{"message":"gateway ZX-9: upstream pool drained for tenant t-1"}`)}

// An overlay adds a rule without a new binary: the merged engine
// classifies what the embedded one left unclassified, under the version
// embedded+overlay.
func TestOverlayAddsARule(t *testing.T) {
	if v := catalogue.Default().Classify(drainedEvidence); v.Code != classify.CodeUnclassified {
		t.Fatalf("embedded: got %s, want unclassified (the test's premise)", v.Code)
	}
	o, err := catalogue.ParseOverlay(drained(t))
	if err != nil {
		t.Fatal(err)
	}
	v := o.Engine.Classify(drainedEvidence)
	if v.Code != "provider_overloaded" || v.Rule != "zxgateway.pool_drained.v1" {
		t.Errorf("got %s by %q, want provider_overloaded by the overlay's rule", v.Code, v.Rule)
	}
	if want := catalogue.Default().Version() + "+field-1"; v.CatalogueVersion != want || o.Engine.Version() != want {
		t.Errorf("version %q, want %q", v.CatalogueVersion, want)
	}
	if len(o.Added) != 1 || len(o.Changed) != 0 || len(o.Hash) != 64 {
		t.Errorf("added %v, changed %v, hash %q", o.Added, o.Changed, o.Hash)
	}
}

// An overlay rule with the id of an embedded rule replaces it, and the
// embedded rule's fixtures go with it.
func TestOverlayOverridesARule(t *testing.T) {
	base, err := catalogue.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(drained(t), &doc); err != nil {
		t.Fatal(err)
	}
	victim := base.Rules[0].ID
	doc["rules"].([]any)[0].(map[string]any)["id"] = victim
	for _, f := range doc["fixtures"].([]any) {
		f.(map[string]any)["rule"] = victim
	}
	b, _ := json.Marshal(doc)
	o, err := catalogue.MergeOverlay(base, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Changed) != 1 || o.Changed[0] != victim || len(o.Added) != 0 {
		t.Errorf("changed %v, added %v; want %s changed", o.Changed, o.Added, victim)
	}
	if r, _ := o.Engine.Rule(victim); r.Code != "provider_overloaded" {
		t.Errorf("rule %s is %+v, want the overlay's", victim, r)
	}
}

// A bad overlay is refused with an error that names the problem.
func TestOverlayRefused(t *testing.T) {
	good := string(drained(t))
	for _, tt := range []struct {
		name, doc, want string
	}{
		{"not JSON", `{"version":`, "unexpected EOF"},
		{"unknown field", `{"version":"x","rules":[],"extra":1}`, "unknown field"},
		{"no version", strings.Replace(good, `"field-1"`, `""`, 1), "version"},
		{"plus in version", strings.Replace(good, `"field-1"`, `"a+b"`, 1), "without '+'"},
		{"no rules", `{"version":"x","rules":[]}`, "no rules"},
		{"no negative", strings.Replace(good, `"match": false`, `"match": true`, 1), "needs a positive and a negative fixture"},
		{"bad regex", strings.Replace(good, `(?i)^gateway`, `(?i)^gateway(`, 1), "does not compile"},
		{"own fixture fails", strings.Replace(good, `we discussed the upstream pool drained alert in the notes`, `gateway ZX-1: upstream pool drained`, 1), "its own fixture"},
		{"embedded fixture fails", strings.NewReplacer(`"literal": "upstream pool drained", `, ``,
			`(?i)^gateway ZX-\\d+: upstream pool drained\\b`, `(?i)(gateway ZX-\\d+: upstream pool drained\\b|overloaded)`).Replace(good), "an embedded fixture"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := catalogue.ParseOverlay([]byte(tt.doc))
			if !errors.Is(err, catalogue.ErrOverlay) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want a refusal naming %q", err, tt.want)
			}
		})
	}
}

// BenchmarkParseOverlay is what validating an overlay costs a process
// (once per overlay change): merge, compile, every fixture.
func BenchmarkParseOverlay(b *testing.B) {
	doc, err := os.ReadFile("testdata/overlay-drained.json")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := catalogue.ParseOverlay(doc); err != nil {
			b.Fatal(err)
		}
	}
}
