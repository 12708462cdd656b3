package main

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// replayHTMLGolden is one transcript's --html page, regenerated with
// `go test ./cmd/acp-guard -run TestHTMLReportGolden -update`, never
// edited by hand.
const replayHTMLGolden = "testdata/replay_report.golden.html"

// Every transcript under testdata/transcripts renders, and each turn's
// verdict (its ProviderError code, else its outcome) is on its page.
func TestHTMLReportEveryTranscript(t *testing.T) {
	files, err := transcriptsIn(filepath.Join("..", "..", "testdata", "transcripts"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found %d transcripts, want the golden set", len(files))
	}
	for _, path := range files {
		var js, page, errb bytes.Buffer
		run(context.Background(), []string{"replay", "--json", path}, strings.NewReader(""), &js, &errb)
		errb.Reset()
		code := run(context.Background(), []string{"replay", "--html", path}, strings.NewReader(""), &page, &errb)
		if !strings.HasPrefix(page.String(), "<!DOCTYPE html>") || !strings.HasSuffix(page.String(), "</html>\n") {
			t.Errorf("%s: exit %d, not a whole page (stderr %q)", path, code, errb.String())
			continue
		}
		if code != 0 && !strings.Contains(path, "/bad/") {
			t.Errorf("%s: exit %d (stderr %q)", path, code, errb.String())
		}
		for _, line := range strings.Split(strings.TrimSpace(js.String()), "\n") {
			if line == "" {
				continue
			}
			var tr struct {
				Outcome       string
				ProviderError *struct{ Code string }
			}
			if err := json.Unmarshal([]byte(line), &tr); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			want := `<span class="outcome">` + tr.Outcome + `</span>`
			if tr.ProviderError != nil {
				want = `<code class="verdict-code">` + template.HTMLEscapeString(tr.ProviderError.Code) + `</code>`
			}
			if !strings.Contains(page.String(), want) {
				t.Errorf("%s: the page lacks a turn's verdict %s", path, want)
			}
		}
		if !utf8.ValidString(page.String()) {
			t.Errorf("%s: the page is not valid UTF-8", path)
		}
		// Self-contained: nothing loads (an excerpt may name a URL, as text).
		for _, bad := range []string{"<script", "<link", "<img", "src=", "href=", "url(", "@import"} {
			if strings.Contains(page.String(), bad) {
				t.Errorf("%s: the page holds %q: not self-contained", path, bad)
			}
		}
	}
}

// The page never holds a frame's text: a prompt's and an answer's words
// are on it only as lengths.
func TestHTMLReportNoFrameText(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.jsonl")
	body := strings.Join([]string{
		`{"t_ms":0,"dir":"meta","argv":["agent"],"adapter":"demo"}`,
		`{"t_ms":1,"dir":"c2a","msg":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"SECRET-PROMPT"}]}}}`,
		`{"t_ms":2,"dir":"a2c","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"SECRET-ANSWER"}}}}}`,
		`{"t_ms":3,"dir":"stderr","msg":"SECRET-STDERR <script>"}`,
		`{"t_ms":4,"dir":"a2c","msg":{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}}`,
	}, "\n") + "\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"replay", "--html", p}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if s := out.String(); strings.Contains(s, "SECRET") || !strings.Contains(s, "‹13 chars›") {
		t.Errorf("the page shows frame text or not its length:\n%s", s)
	}
}

func TestHTMLReportFlags(t *testing.T) {
	var out, errb bytes.Buffer
	p := filepath.Join("..", "..", "testdata", "transcripts", "recorded", "success.jsonl")
	if code := run(context.Background(), []string{"replay", "--html", "--json", p}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Errorf("--html --json: exit %d, want 2", code)
	}
	if code := run(context.Background(), []string{"replay", "--serve", "--html", p}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Errorf("--serve --html: exit %d, want 2", code)
	}
}

func TestHTMLReportGolden(t *testing.T) {
	p := filepath.Join("..", "..", "testdata", "transcripts", "terminal", "retry_now.jsonl")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"replay", "--html", p}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := strings.ReplaceAll(out.String(), versionString(), "VERSION")
	if *update {
		if err := os.WriteFile(replayHTMLGolden, []byte(got), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(replayHTMLGolden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the page differs from %s (rerun with -update and review the diff)", replayHTMLGolden)
	}
}
