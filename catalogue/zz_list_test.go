package catalogue

import (
	"os"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/classify"
)

func TestZZList(t *testing.T) {
	file := os.Getenv("ZZ")
	if file == "" {
		t.Skip()
	}
	e := Default()
	for _, en := range readCorpus(t, file) {
		if en.Code == "none" {
			v := e.Classify(classify.Evidence{Source: classify.SourceMessageChunk, Message: en.Text, Now: classify.DefaultFixtureNow})
			if v.Code != classify.CodeUnclassified {
				t.Logf("NEG %s got=%s rule=%s note=%q\n   %q", en.ID, v.Code, v.Rule, en.Note, trunc(en.Text))
			}
			continue
		}
		var bad []string
		scoreShapes(e, en, func(shape string, v classify.Verdict, miss missKind) {
			if miss != missNone {
				k := map[missKind]string{missWrongClass: "WRONG", missUnclassified: "UNCL", missOtherCode: "OTHER"}[miss]
				bad = append(bad, shape+":"+k+":"+v.Code+":"+v.Rule)
			}
		})
		if len(bad) > 0 {
			t.Logf("MISS %s want=%s status=%d\n   %s\n   %q", en.ID, en.Code, en.Status, strings.Join(bad, " "), trunc(en.Text))
		}
	}
}

func trunc(s string) string {
	if len(s) > 500 {
		return s[:500]
	}
	return s
}

func TestZZWhy(t *testing.T) {
	file, id := os.Getenv("ZZ"), os.Getenv("ZZID")
	if file == "" || id == "" {
		t.Skip()
	}
	e := Default()
	var singles []*classify.Engine
	for _, r := range e.Rules() {
		r.Outranks = nil
		one, err := classify.CompileRules(classify.Catalogue{Version: "x", Rules: []classify.Rule{r}})
		if err != nil {
			t.Fatal(err)
		}
		singles = append(singles, one)
	}
	for _, en := range readCorpus(t, file) {
		if en.ID != id {
			continue
		}
		evs := map[string]classify.Evidence{"text": {Source: classify.SourceMessageChunk, Message: en.Text, Now: classify.DefaultFixtureNow}}
		if en.Status != 0 {
			evs["envelope"] = classify.Evidence{Source: classify.SourceRPCError, RPCCode: intp(-32603), HTTPStatus: en.Status, Message: en.Text, Now: classify.DefaultFixtureNow}
		}
		for name, ev := range evs {
			var ids []string
			for _, one := range singles {
				if v := one.Classify(ev); v.Rule != "" {
					ids = append(ids, v.Rule+"="+v.Code)
				}
			}
			v := e.Classify(ev)
			t.Logf("%s: verdict %s by %s; matching: %s", name, v.Code, v.Rule, strings.Join(ids, " "))
		}
	}
}
