package catalogue

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/classify"
)

// TestBlindCorpus scores a frozen blind set at first contact, before anyone
// on the project reads it: it prints figures only — per shape, the misses
// by kind (wrong class, unclassified, right class with another code) and the
// negatives (soft ones as the target, hard ones reported apart) — never an
// entry's text or id, so scoring does not teach.
//
//	CORPUS_BLIND=../testdata/corpus/holdout6.jsonl go test ./catalogue -run TestBlindCorpus -v
//
// It fails only when the set cannot be read; the figures are the report
// (docs/CATALOGUE.md keeps them beside the catalogue version they were
// measured with). Without CORPUS_BLIND it skips.
func TestBlindCorpus(t *testing.T) {
	file := os.Getenv("CORPUS_BLIND")
	if file == "" {
		t.Skip("CORPUS_BLIND names the blind set to score")
	}
	entries := readCorpus(t, file)
	e := Default()
	shapes := map[string]*tally{}
	var all, negatives, hard tally
	var wrongClass, otherCode, unclassified, failures int
	negativeCodes := map[string]int{}
	for _, en := range entries {
		if en.Code == "none" {
			v := e.Classify(classify.Evidence{Source: classify.SourceMessageChunk, Message: en.Text, Now: classify.DefaultFixtureNow})
			right := v.Code == classify.CodeUnclassified
			if strings.HasPrefix(en.Note, "hard negative") {
				hard.add(right)
				continue
			}
			negatives.add(right)
			if !right {
				negativeCodes[v.Code]++
			}
			continue
		}
		failures++
		scoreShapes(e, en, func(shape string, _ classify.Verdict, miss missKind) {
			count(shapes, shape, miss == missNone)
			all.add(miss == missNone)
			switch miss {
			case missUnclassified:
				unclassified++
			case missWrongClass:
				wrongClass++
			case missOtherCode:
				otherCode++
			}
		})
	}
	codes := make([]string, 0, len(negativeCodes))
	for c, n := range negativeCodes {
		codes = append(codes, fmt.Sprintf("%s×%d", c, n))
	}
	sort.Strings(codes)
	t.Logf("%s with catalogue %s: %d entries, %d failures, %d soft negatives", file, e.Version(), len(entries), failures, negatives.n)
	t.Logf("by shape:\n%s", table(shapes))
	t.Logf("all shapes: %s right; misses: %d wrong class, %d unclassified, %d right class with another code", all, wrongClass, unclassified, otherCode)
	t.Logf("negatives unclassified: %s; classified as: %s", negatives, strings.Join(codes, ", "))
	t.Logf("hard negatives unclassified: %s (reported, not a target: their text alone reads as a provider failure and only their source tells them apart; most are tool, build or other services' output, which a turn carries in tool calls, never classified)", hard)
}
