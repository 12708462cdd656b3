package acpschema_test

import "testing"

// Compaction (request.compact_then_retry): the notice, acp-guard's own
// /compact prompt, the compaction turn's updates with the added
// _meta.acpGuard.compaction, the retry and the result marked compacted —
// and each way it stops — are valid ACP.
func TestSchemaCompaction(t *testing.T) {
	t.Parallel()
	schemaOrSkip(t)
	pol := writeFile(t, "compact.json", `{"version":1,
"transient":{"on_exhausted":"stop"},"hard":{"on_exhausted":"stop"},
"request":{"compact_then_retry":true}}`)
	for _, tt := range []struct {
		scenario string
		want     counts
	}{
		// notice, marked summary chunk, result; /compact and the retry
		{"compact", counts{3, 2}},
		{"compact-none", counts{1, 0}},
		{"compact-fail", counts{2, 1}},
		{"compact-empty", counts{2, 1}},
		{"compact-again", counts{3, 2}},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			conform(t, onePrompt(t, []string{"--policy", pol}, "--scenario", tt.scenario), tt.want)
		})
	}
}
