package main

import (
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

func TestE2EVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, stderr, code := runBin(t, nil, "", args...)
		if code != 0 || !strings.HasPrefix(out, "acp-guard ") || strings.Count(out, "\n") != 1 || stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one version line", args, code, out, stderr)
		}
	}
	// After the agent's name, --version is the agent's.
	out, _, code := runBin(t, nil, "", "sh", "-c", `echo "agent got $1"`, "sh", "--version")
	if code != 0 || out != "agent got --version\n" {
		t.Errorf("agent's --version: exit %d, stdout %q", code, out)
	}
}

// Typos of subcommands exit 2 with a suggestion; an agent given without
// "--" still runs.
func TestE2ESubcommandTypos(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args    []string
		code    int
		stderr  string // must contain
		wantOut string // stdout, when checked
	}{
		{[]string{"policy", "chek", "good.json"}, 2, "Did you mean this?\n\tcheck", ""},
		{[]string{"policy", "nonsense"}, 2, `unknown command "nonsense" for "acp-guard policy"`, ""},
		{[]string{"catalog", "list"}, 2, "Did you mean this?\n\tcatalogue", ""},
		{[]string{"verison"}, 2, "\tversion", ""},
		{[]string{"--", "catalog", "list"}, 127, "not found", ""},
		{[]string{"no-such-agent-and-no-near-miss"}, 127, "not found", ""},
		{[]string{"sh", "-c", "echo relayed"}, 0, "", "relayed\n"},
	} {
		out, stderr, code := runBin(t, nil, "", tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.stderr) || (tt.wantOut != "" && out != tt.wantOut) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, stderr with %q", tt.args, code, out, stderr, tt.code, tt.stderr)
		}
	}
}

// A policy with omitted sections runs: "retry transient failures" alone
// recovers a transient failure.
func TestE2EShortPolicyRecovers(t *testing.T) {
	t.Parallel()
	pol := acptest.WriteFile(t, "short.json", `{"transient":{"retry":{"max_retries":2,"initial_interval_seconds":1}}}`)
	p := startBin(t, nil, proxy(t, []string{"--policy", pol, "--state-dir", t.TempDir()},
		"--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp")...)
	p.TrySend(acptest.Initialize(1), acptest.SessionNew(2))
	p.Until("2")
	p.TrySend(acptest.Prompt(3, "sess-1"))
	frames := p.Until("3")
	if last := frames[len(frames)-1]; last.Error != nil || !strings.Contains(string(last.Result), "end_turn") {
		t.Errorf("prompt answered %s, want the retried end_turn", last.Raw)
	}
	if _, code := p.Finish(); code != 0 {
		t.Errorf("exit %d", code)
	}
}

func TestE2EDemoMistakesAndOutput(t *testing.T) {
	t.Parallel()
	_, stderr, code := runBin(t, nil, "", "demo", "--scenario", "nope")
	if code != 2 || !strings.Contains(stderr, `unknown scenario "nope"`) || !strings.Contains(stderr, "codex-error") {
		t.Errorf("exit %d, stderr %q; want 2 naming the scenario and listing the known ones", code, stderr)
	}
	out, stderr, code := runBin(t, nil, "", "demo", "--scenario", "codex-error")
	if code != 0 || !strings.Contains(out, `evidence={"assistantOutput":false`) || strings.Contains(out, "map[") {
		t.Errorf("exit %d, stdout:\n%s\nstderr %q; want evidence as JSON, no Go map syntax", code, out, stderr)
	}
	// The verdict and what the agent said come first, Cursor's fixed
	// diagnostic (the JSON-RPC message) after them; no policy is said so.
	out, stderr, code = runBin(t, nil, "", "demo", "--scenario", "cursor-retriable")
	verdict := strings.Index(out, "✘ prompt failed — providerError: code=agent_transport_lost class=transient confidence=high rule=cursor.retriable_stream_reset.v1\n")
	excerpt := strings.Index(out, `safeExcerpt="[unavailable] PING timed out"`)
	message := strings.Index(out, "JSON-RPC error -32603: Error: RetriableError: HTTP/2 stream closed")
	if code != 0 || verdict < 0 || excerpt < verdict || message < excerpt || !strings.Contains(out, "recovery=stop/no_policy") {
		t.Errorf("exit %d, stdout:\n%s\nstderr %q; want the verdict, the excerpt, then the message, and recovery=stop/no_policy", code, out, stderr)
	}
}

// A file that is not a transcript gets one clear line, not one per line;
// many bad lines in a transcript are bounded and counted.
func TestE2EReplayNotATranscript(t *testing.T) {
	t.Parallel()
	junk := acptest.WriteFile(t, "app.log", strings.Repeat("an ordinary log line\n", 3000))
	_, stderr, code := runBin(t, nil, "", "replay", junk)
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "is not a transcript") {
		t.Errorf("exit %d, stderr (%d lines) %.300q; want 1 and one line", code, strings.Count(stderr, "\n"), stderr)
	}
	mixed := acptest.WriteFile(t, "mixed.jsonl", `{"t_ms":0,"dir":"meta","argv":["x"]}`+"\n"+strings.Repeat("junk\n", 500))
	_, stderr, code = runBin(t, nil, "", "replay", mixed)
	if code != 1 || strings.Count(stderr, "\n") > maxProblems+1 || !strings.Contains(stderr, "more problems not shown") {
		t.Errorf("exit %d, %d stderr lines; want at most %d and a count of the rest", code, strings.Count(stderr, "\n"), maxProblems+1)
	}
}
