package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/guard"
)

// One evidence path: for every recorded turn in testdata/transcripts, the
// verdict `classify --transcript` reports is the live pipeline's
// (`replay --json`), and feeding the printed envelope back to plain
// `classify` reproduces it — so the troubleshooting step (classify what
// the proxy saw) cannot contradict the proxy.
func TestClassifyAgreesWithLiveOnEveryRecordedTurn(t *testing.T) {
	var files []string
	_ = filepath.WalkDir("../../testdata/transcripts", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") && !strings.HasSuffix(path, ".expected.jsonl") {
			files = append(files, path)
		}
		return nil
	})
	if len(files) < 50 {
		t.Fatalf("found %d transcripts, want the whole corpus", len(files))
	}
	checked := 0
	for _, path := range files {
		var flags []string
		if a, err := os.ReadFile(strings.TrimSuffix(path, ".jsonl") + ".adapter"); err == nil {
			flags = []string{"--adapter", strings.TrimSpace(string(a))}
		}
		live := runLines(t, append(append([]string{"replay", "--json"}, flags...), path), "", true)
		got := runLines(t, append([]string{"classify", "--transcript", path}, flags...), "", false)
		if len(got) != len(live) {
			t.Errorf("%s: classify reports %d turns, replay %d", path, len(got), len(live))
			continue
		}
		for i := range live {
			var lt struct {
				ProviderError *verdictJSON `json:"providerError"`
			}
			var ct transcriptVerdict
			mustUnmarshal(t, live[i], &lt)
			mustUnmarshal(t, got[i], &ct)
			if lt.ProviderError == nil || guardMade[lt.ProviderError.Rule] {
				continue // nothing to classify, or the guard's own verdict (no engine call)
			}
			if ct.Verdict == nil || ct.Evidence == nil {
				t.Errorf("%s turn %d: the live proxy classified it, classify --transcript shows no verdict", path, i+1)
				continue
			}
			if a, b := key(*lt.ProviderError), key(*ct.Verdict); a != b {
				t.Errorf("%s turn %d: live %s, classify --transcript %s", path, i+1, a, b)
			}
			env, _ := json.Marshal(ct.Evidence)
			var again verdictJSON
			mustUnmarshal(t, runLines(t, append([]string{"classify", "--now", ct.Now}, flags...), string(env), false)[0], &again)
			if a, b := key(*lt.ProviderError), key(again); a != b {
				t.Errorf("%s turn %d: live %s, classify of the printed envelope %s", path, i+1, a, b)
			}
			checked++
		}
	}
	if checked < 60 {
		t.Errorf("checked %d classified turns, want the corpus's failures (60 or more)", checked)
	}
	t.Logf("%d transcripts, %d classified turns agree", len(files), checked)
}

// guardMade are the rules of verdicts the guard makes itself, without
// the classification engine: classify --transcript has nothing to show
// for them.
var guardMade = map[string]bool{guard.RuleStall: true, guard.RuleEmptyTurn: true}

// key is what must agree between two verdicts.
func key(v verdictJSON) string {
	b, _ := json.Marshal(struct {
		Code, Class, Rule, Reason string
		Conflicts                 []string
		RetryAfterMs              *int64
		ResetAt                   *string
	}{v.Code, string(v.Class), v.Rule, v.Reason, v.Conflicts, v.RetryAfterMs, v.ResetAt})
	return string(b)
}

func runLines(t *testing.T, args []string, stdin string, allowBad bool) [][]byte {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	if code != 0 && !(allowBad && code == 1) {
		t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	var lines [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		if len(l) > 0 {
			lines = append(lines, l)
		}
	}
	return lines
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

// Every example in `classify --help` classifies (issue 12: the README's
// troubleshooting step must be true).
func TestClassifyHelpExamplesClassify(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"classify", "--help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("help: exit %d: %s", code, errb.String())
	}
	n := 0
	for _, line := range strings.Split(out.String(), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "acp-guard classify ") || strings.Contains(line, "--transcript") || strings.Contains(line, "[TEXT]") {
			continue
		}
		args := shellWords(t, strings.TrimPrefix(line, "acp-guard "))
		var v verdictJSON
		mustUnmarshal(t, runLines(t, args, "", false)[0], &v)
		if v.Code == "unclassified" {
			t.Errorf("example %q: unclassified (%s)", line, v.Reason)
		}
		n++
	}
	if n < 3 {
		t.Errorf("found %d examples in classify --help, want 3 or more", n)
	}
}

// shellWords splits a line on spaces outside single quotes.
func shellWords(t *testing.T, s string) []string {
	var out []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}
