package main

import (
	"strings"
	"testing"
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
