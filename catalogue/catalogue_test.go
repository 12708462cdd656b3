package catalogue

import (
	"testing"

	"github.com/acp-guard/acp-guard/classify"
)

func TestEmbeddedCatalogueCompilesAndPasses(t *testing.T) {
	c, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	e, err := classify.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	rep := e.Test()
	for _, r := range rep.Rules {
		for _, f := range r.Failures {
			t.Errorf("%s: %s", r.Rule, f)
		}
	}
}
