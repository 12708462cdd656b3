package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// Every start-up configuration error answers the client's initialize with
// a JSON-RPC error naming the problem (an editor sees only stdout), says it
// on stderr, and exits 2.
func TestE2EStartupErrorsOnTheWire(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badPolicy := filepath.Join(dir, "bad-policy.json")
	os.WriteFile(badPolicy, []byte(`{"version":1,"transient":{"retry":{"enabled":true,"max_retries":99}}}`), 0o600)
	badCatalogue := filepath.Join(dir, "bad-catalogue.json")
	os.WriteFile(badCatalogue, []byte(`{not json`), 0o600)
	link := filepath.Join(dir, "link.jsonl")
	os.Symlink(filepath.Join(dir, "target"), link)
	for _, tt := range []struct {
		name  string
		flags []string
		want  string // in the message and on stderr
	}{
		{"invalid policy", []string{"--policy", badPolicy}, "max_retries"},
		{"missing policy", []string{"--policy", filepath.Join(dir, "nope.json")}, "--policy"},
		{"invalid catalogue", []string{"--catalogue", badCatalogue}, "--catalogue"},
		{"log level", []string{"--log-level", "loud"}, "--log-level"},
		{"log file dir", []string{"--log-file", filepath.Join(dir, "no", "x.log")}, "--log-file"},
		{"record symlink", []string{"--record", link}, "symbolic link"},
		{"notices", []string{"--notices", "shout"}, "--notices"},
		{"max line", []string{"--max-line", "10"}, "--max-line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, stderr, code := runBin(t, nil, acptest.Initialize(1), proxy(t, tt.flags, "--scenario", "success")...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
			var r startupReply
			if err := json.Unmarshal([]byte(out), &r); err != nil || strings.Count(out, "\n") != 1 {
				t.Fatalf("stdout %q: want exactly one JSON-RPC response (%v)", out, err)
			}
			if string(r.ID) != "1" || r.Error.Code != -32603 || !strings.Contains(r.Error.Message, tt.want) ||
				strings.Contains(r.Error.Message, "\n") || !strings.Contains(r.Error.Data.AcpGuard.ConfigError, tt.want) {
				t.Errorf("response %s: want an error to id 1 naming %q on one line", out, tt.want)
			}
		})
	}
}

// A client that closes its input without a request gets nothing on stdout
// and acp-guard still exits 2 at once.
func TestE2EStartupErrorWithoutRequest(t *testing.T) {
	t.Parallel()
	out, _, code := runBin(t, nil, `{"jsonrpc":"2.0","method":"note"}`+"\n", proxy(t, []string{"--log-level", "loud"}, "--scenario", "success")...)
	if code != 2 || out != "" {
		t.Errorf("exit %d, stdout %q; want 2 and nothing", code, out)
	}
}
