package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// replayGolden is the readable output of `acp-guard replay` (and of
// classify --turn), as a person reads it: regenerated with
// `go test ./cmd/acp-guard -run TestE2EReplayReadableGolden -update`,
// never edited by hand.
const replayGolden = "testdata/replay_readable.golden"

// The built binary's readable replay says what --json says: a silent turn
// is flagged, turns are numbered from 1 beside their request ids (and
// classify --turn takes either), a directory is every transcript below it
// with a summary per file and a total, and a divergence says how to
// reproduce the recorded decision.
func TestE2EReplayReadableGolden(t *testing.T) {
	t.Parallel()
	transcripts, err := filepath.Abs(filepath.Join("..", "..", "testdata", "transcripts"))
	if err != nil {
		t.Fatal(err)
	}
	// A directory of its own: a transcript at its top, one below, and an
	// expectation file that is not a transcript (skipped).
	tree := t.TempDir()
	copyFile(t, filepath.Join(transcripts, "real", "claude", "empty_answer.jsonl"), filepath.Join(tree, "dir", "one.jsonl"))
	copyFile(t, filepath.Join(transcripts, "real", "claude", "empty_answer.expected.jsonl"), filepath.Join(tree, "dir", "one.expected.jsonl"))
	copyFile(t, filepath.Join(transcripts, "real", "claude", "stale_turn_after_error.jsonl"), filepath.Join(tree, "dir", "sub", "two.jsonl"))
	if err := os.MkdirAll(filepath.Join(tree, "empty"), 0o700); err != nil {
		t.Fatal(err)
	}

	var got strings.Builder
	for _, c := range []struct {
		dir  string
		args []string
	}{
		{transcripts, []string{"replay", "real/claude/empty_answer.jsonl"}},
		{transcripts, []string{"replay", "real/claude/stale_turn_after_error.jsonl"}},
		{tree, []string{"replay", "dir"}},
		{tree, []string{"replay", "empty"}},
		{transcripts, []string{"replay", "bad"}},
		{transcripts, []string{"classify", "--transcript", "real/codex/billing.jsonl", "--turn", "3"}},
		{transcripts, []string{"classify", "--transcript", "real/claude/stale_turn_after_error.jsonl", "--turn", "3"}},
		{transcripts, []string{"classify", "--transcript", "real/claude/stale_turn_after_error.jsonl", "--turn", "9"}},
	} {
		out, stderr, code := acptest.Run(t, append([]string{acptest.Bin(t)}, c.args...), acptest.Options{Env: acptest.CleanEnv(t), Dir: c.dir}, "")
		fmt.Fprintf(&got, "$ acp-guard %s\n%s[stderr]\n%s[exit %d]\n\n", strings.Join(c.args, " "), out, stderr, code)
	}
	if *update {
		if err := os.WriteFile(replayGolden, []byte(got.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(replayGolden)
	if err != nil {
		t.Fatalf("%v (write it with -update)", err)
	}
	if got.String() != string(want) {
		t.Errorf("readable replay output differs from %s (review, then regenerate with -update):\n%s", replayGolden, lineDiff(string(want), got.String()))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// lineDiff shows the first lines where want and got part.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
