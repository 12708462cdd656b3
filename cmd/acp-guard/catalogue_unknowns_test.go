package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/internal/acptest"
)

// A shape keeps the words of a failure and collapses what varies between
// its occurrences — numbers, ids, hosts, URLs, quoted names — so one
// failure is one group and no tenant, host or person is printed.
func TestUnknownShape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"gateway ZX-4471: upstream pool drained for tenant acme-42, come back later",
			"gateway <id>: upstream pool drained for tenant <id>, come back later"},
		{`model "gpt-5-mini" is not served at https://llm.internal.example.com/v1/chat (req_8f3a9c2e1b7d)`,
			"model <quoted> is not served at <url> (<id>)"},
		{"connect to 10.2.3.4:8443 failed after 3 attempts; host api.acme.io refused",
			"connect to <ip> failed after <n> attempts; host <host> refused"},
		{"trace 3f2b8c1d-aaaa-4bbb-8ccc-1234567890ab: quota 1,000,000 tokens exceeded",
			"trace <id>: quota <n> tokens exceeded"},
		{"  spaced\n\tout  ", "spaced out"},
	} {
		if got := unknownShapeOf(classify.RedactSecrets(tt.in)); got != tt.want {
			t.Errorf("shape of %q:\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
	if got := unknownShapeOf(classify.RedactSecrets("invalid key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789")); strings.Contains(got, "abcdefghij") {
		t.Errorf("a secret reached the shape: %q", got)
	}
}

// Unreadable input is a clear error naming the file; an attempt log's
// unclassified failures are counted under a shape of their own.
func TestUnknownsInputs(t *testing.T) {
	t.Parallel()
	_, stderr, code := runBin(t, nil, "", "catalogue", "unknowns", "/no/such/file.jsonl")
	if code != 1 || !strings.Contains(stderr, "/no/such/file.jsonl") {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}
	junk := writeTemp(t, "junk.jsonl", "not json\n")
	_, stderr, code = runBin(t, nil, "", "catalogue", "unknowns", junk)
	if code != 1 || !strings.Contains(stderr, "neither a transcript nor an attempt log") {
		t.Errorf("junk: exit %d, stderr %q", code, stderr)
	}
	// Under a directory, such a file is skipped with a note.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.expected.jsonl"), []byte(`{"turn":1}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runBin(t, nil, "", "catalogue", "unknowns", dir)
	if code != 0 || !strings.Contains(stderr, "x.expected.jsonl skipped") || !strings.Contains(out, "0 unclassified failure shape(s)") {
		t.Errorf("directory: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	log := writeTemp(t, "attempts.jsonl",
		`{"time":"2026-12-01T10:00:00Z","sessionId":"s","requestId":"3","generation":1,"attempt":0,"model":"gpt-5","code":"unclassified","class":"unclassified","decision":{"action":"stop","delayMs":0,"attempt":0,"maxRetries":0,"class":"unclassified","reason":"unclassified"},"policy":{"version":1,"transient":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"skip"},"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"skip"}},"outcome":"stopped"}`+"\n")
	out, stderr, code = runBin(t, nil, "", "catalogue", "unknowns", "--json", log)
	if code != 0 || !strings.Contains(out, `"shape":"`+attemptLogShape+`","count":1`) || !strings.Contains(out, `"models":["gpt-5"]`) {
		t.Errorf("attempt log: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	return acptest.WriteFile(t, name, content)
}
