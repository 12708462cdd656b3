package catalogue

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/classify"
)

// TestProbeCorpus: testdata/probe/probe.jsonl holds error strings written
// from providers' error references and SDK sources (not from the corpora),
// and prose that only mentions a failure (commit headings, chatter,
// questions, explanations). It measures first contact on wording the
// rules were not written from; its floors are the figures the catalogue
// reached (docs/CATALOGUE.md), and no entry may get another class than its
// label, nor a negative any class.
func TestProbeCorpus(t *testing.T) {
	for _, f := range []string{"../testdata/probe/probe.jsonl", "../testdata/probe/probe2.jsonl", "../testdata/probe/probe3.jsonl"} {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".jsonl"), func(t *testing.T) { testProbe(t, f) })
	}
}

func testProbe(t *testing.T, file string) {
	if wrong := testCorpus(t, file, probeMinAccuracy); wrong > 0 {
		t.Errorf("probe: %d misses of another class than the label", wrong)
	}
	e := Default()
	var neg tally
	for _, en := range readCorpus(t, file) {
		if en.Code != "none" {
			continue
		}
		v := e.Classify(classify.Evidence{Source: classify.SourceMessageChunk, Message: en.Text, Now: classify.DefaultFixtureNow})
		neg.add(v.Code == classify.CodeUnclassified)
		if v.Code != classify.CodeUnclassified {
			t.Logf("negative %s classified %s by %s: %.160q", en.ID, v.Code, v.Rule, en.Text)
		}
	}
	t.Logf("probe negatives unclassified: %s", neg)
	if neg.ok != neg.n {
		t.Errorf("probe negatives: %s unclassified, want all", neg)
	}
}

// probeMinAccuracy is the share of probe entries every shape must get right.
const probeMinAccuracy = 0.9
