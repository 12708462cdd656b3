package demoagent

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestProviderFailuresGolden pins every family × kind failure, as the
// client sees it, in testdata/failures.golden. Regenerate with -update and
// review the diff.
func TestProviderFailuresGolden(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	for _, family := range []string{familyGeneric, familyCursor, familyCodex, familyClaude, familyGemini} {
		for _, kind := range ErrorKinds() {
			f, err := providerFailure(family, kind, now, 90*time.Second)
			if err != nil {
				t.Fatalf("%s/%s: %v", family, kind, err)
			}
			if (f.rpc == nil) == (f.chunk == "") {
				t.Fatalf("%s/%s: got %+v, want exactly one of an error and a chunk", family, kind, f)
			}
			fmt.Fprintf(&buf, "# %s %s\n", family, kind)
			if f.rpc != nil {
				buf.Write(errorLine([]byte("7"), f.rpc))
			} else {
				buf.Write(textLine("sess-1", updateMessageChunk, f.chunk))
			}
		}
	}
	golden := filepath.Join("testdata", "failures.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("failures differ from %s (run go test -update and review the diff):\n%s", golden, buf.String())
	}
}

func TestFamilyOf(t *testing.T) {
	for _, tt := range []struct{ name, want string }{
		{"cursor-agent", familyCursor},
		{"cursor-acp", familyCursor},
		{"codex-acp", familyCodex},
		{"@zed-industries/claude-agent-acp", familyClaude},
		{"claude-code-acp", familyClaude},
		{"gemini-cli", familyGemini},
		{"demo-agent", familyGeneric},
		{"", familyGeneric},
	} {
		if got := familyOf(tt.name); got != tt.want {
			t.Errorf("familyOf(%q): got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestQuotaResetHint(t *testing.T) {
	now := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	for _, tt := range []struct {
		agentName string
		want      string // substring of the frame carrying the hint
	}{
		{"codex-acp", "try again in 120s"},
		{"claude-agent-acp", "You will regain access on 2026-03-02 at 00:01 UTC."},
		{"gemini-cli", `\"retryDelay\":\"120s\"`},
		{"demo-agent", "try again in 120s"},
		{"cursor-agent", "Try again in 120s"},
	} {
		c := startAgent(t, Options{Scenario: "quota-reset", AgentName: tt.agentName, ResetIn: 2 * time.Minute, Now: func() time.Time { return now }})
		c.prompt(c.session())
		if line := c.nextLine(); !bytes.Contains(line, []byte(tt.want)) {
			t.Errorf("%s: got %s, want it to contain %s", tt.agentName, line, tt.want)
		}
	}
}
