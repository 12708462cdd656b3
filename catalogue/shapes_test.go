package catalogue

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/classify"
)

// Agents and the wrappers between them and a provider hand the same
// failure over in many layouts: the message alone, inside a JSON error
// body, escaped into a log line, a body inside another body, behind a log
// prefix or a level word, inside a wrapper's own sentence. A rule that
// reads the words must read them in every layout, or first contact
// depends on which wrapper a user happens to run. TestWrappedShapes takes
// the corpus failures the catalogue gets right as plain text (every other
// entry of each corpus) and checks
// it stays right in each wrapping; what a wrapping cannot keep (a status
// only the text's first word gave, a whole-text phrase) is the small
// remainder the floor allows.

// wrappedShapeFloor is the share of the plain-text hits each wrapping must
// keep.
const wrappedShapeFloor = 0.98

func wrappings() []struct {
	name string
	wrap func(string) string
} {
	escaped := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b[1 : len(b)-1])
	}
	body := func(v any) string {
		var sb strings.Builder
		enc := json.NewEncoder(&sb)
		enc.SetEscapeHTML(false) // as JavaScript's JSON.stringify and Python's json.dumps write it
		_ = enc.Encode(v)
		return strings.TrimSpace(sb.String())
	}
	return []struct {
		name string
		wrap func(string) string
	}{
		{"a JSON error body", func(s string) string { return body(map[string]any{"error": map[string]any{"message": s}}) }},
		{"escaped into a log line", func(s string) string { return "Error: " + escaped(s) }},
		{"a body inside a body", func(s string) string {
			return "API Error: " + body(map[string]any{"error": map[string]any{"message": escaped(s), "type": "upstream_error"}})
		}},
		{"a log prefix and a wrapper's sentence", func(s string) string {
			return "[ERROR] agent: request failed: " + s + " (request id: req_REDACTED)"
		}},
		{"a level word", func(s string) string { return "ERROR " + s }},
	}
}

func TestWrappedShapes(t *testing.T) {
	e := Default()
	files, err := filepath.Glob("../testdata/corpus/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpora: %v", err)
	}
	chunk := func(s string) classify.Verdict {
		return e.Classify(classify.Evidence{Source: classify.SourceMessageChunk, Message: s, Now: classify.DefaultFixtureNow})
	}
	ws := wrappings()
	kept := make([]int, len(ws))
	lost := make([][]string, len(ws))
	plain := 0
	for _, f := range files {
		for n, en := range readCorpus(t, f) {
			// Every other entry of each corpus: the engine costs about 2 ms
			// a text, and half the corpora measure a layout as well.
			if n%2 == 1 || en.Code == "none" || chunk(en.Text).Code != en.Code {
				continue
			}
			plain++
			for i, w := range ws {
				if v := chunk(w.wrap(en.Text)); v.Code == en.Code {
					kept[i]++
				} else {
					lost[i] = append(lost[i], en.ID+" → "+v.Code)
				}
			}
		}
	}
	if plain < 500 {
		t.Fatalf("only %d plain-text hits across the corpora: the corpora did not load", plain)
	}
	for i, w := range ws {
		share := float64(kept[i]) / float64(plain)
		t.Logf("%-24s keeps %d/%d (%.1f%%)", w.name, kept[i], plain, 100*share)
		if share < wrappedShapeFloor {
			t.Errorf("%s keeps %.1f%% of the plain-text hits, want ≥ %.0f%%; lost: %s", w.name, 100*share, 100*wrappedShapeFloor, strings.Join(lost[i], ", "))
		}
	}
}
