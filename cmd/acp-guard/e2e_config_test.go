package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// writeConfig writes $XDG_CONFIG_HOME/acp-guard/config.json and returns the
// environment pointing there.
func writeConfig(t *testing.T, content string) []string {
	t.Helper()
	xdg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(xdg, "acp-guard"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xdg, "acp-guard", "config.json"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"XDG_CONFIG_HOME=" + xdg}
}

// configRows parses `acp-guard config` output into setting → "value | from".
func configRows(out string) map[string]string {
	rows := map[string]string{}
	for _, ln := range strings.Split(out, "\n") {
		f := strings.Fields(ln)
		if len(f) >= 3 {
			rows[f[0]] = f[1] + " | " + strings.Join(f[2:], " ")
		}
	}
	return rows
}

// Precedence flag > environment > config file > default, ~ and $VAR
// expanded in paths, shown by `acp-guard config`.
func TestE2EConfigPrecedence(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := append(writeConfig(t, `{"log-level":"error","notices":"off","policy":"~/file-policy.json","record":"$RUNS/{pid}.jsonl","grace":"2s"}`),
		"HOME="+home, "RUNS=/runs", "ACP_GUARD_LOG_LEVEL=info", "ACP_GUARD_NOTICES=message", "ACP_GUARD_STATE_DIR=~/state")
	out, stderr, code := runBin(t, env, "", "config", "--notices", "thought")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := configRows(out)
	for name, want := range map[string]string{
		"notices":   "thought | flag --notices",
		"log-level": "info | env ACP_GUARD_LOG_LEVEL",
		"state-dir": filepath.Join(home, "state") + " | env ACP_GUARD_STATE_DIR",
		"policy":    filepath.Join(home, "file-policy.json") + " | config file",
		"record":    "/runs/{pid}.jsonl | config file",
		"grace":     "2s | config file",
		"max-line":  "67108864 | default",
		// A flag --help does not show is listed, and says so.
		"jitter-seed": "0 | default (a hidden flag, for tests and replays: not in --help)",
	} {
		if got := rows[name]; !strings.HasPrefix(got, want) {
			t.Errorf("%s: got %q, want %q\n%s", name, got, want, out)
		}
	}
}

// The proxy itself uses the environment and the config file: a policy
// named only there is loaded (an invalid one is reported on the wire), and
// a bad value names its source.
func TestE2EConfigReachesTheProxy(t *testing.T) {
	t.Parallel()
	bad := acptest.WriteFile(t, "policy.json", `{"version":1,"transient":{"retry":{"enabled":true,"max_retries":99}}}`)
	for _, tt := range []struct {
		name string
		env  []string
		want string
	}{
		{"env policy", []string{"ACP_GUARD_POLICY=" + bad}, "max_retries"},
		{"config file policy", writeConfig(t, `{"policy":"`+bad+`"}`), "max_retries"},
		{"bad env value", []string{"ACP_GUARD_MAX_LINE=lots"}, "env ACP_GUARD_MAX_LINE"},
		{"unknown config key", writeConfig(t, `{"polcy":"x"}`), `unknown setting "polcy"`},
		{"config not JSON", writeConfig(t, `policy: x`), "not a JSON object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runBin(t, tt.env, acptest.Initialize(1), proxy(t, nil, "--scenario", "success")...)
			var r startupReply
			if code != 2 || !strings.Contains(stderr, tt.want) || json.Unmarshal([]byte(out), &r) != nil || !strings.Contains(r.Error.Message, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q on the wire and stderr", code, out, stderr, tt.want)
			}
		})
	}
	// A flag beats the environment: the same bad env policy is ignored.
	good := acptest.WriteFile(t, "good.json", `{"version":1}`)
	p := startBin(t, []string{"ACP_GUARD_POLICY=" + bad}, proxy(t, []string{"--policy", good}, "--scenario", "success")...)
	p.TrySend(acptest.Initialize(1))
	if f := p.Until("1"); f[len(f)-1].Error != nil {
		t.Errorf("initialize answered %s", f[len(f)-1].Raw)
	}
	p.Finish()
}

// A recording named in the environment with ~ lands in the home directory,
// and `attempts` finds the state directory from the environment too.
func TestE2EConfigPathsExpanded(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := []string{"HOME=" + home, "ACP_GUARD_RECORD=~/session.jsonl", "ACP_GUARD_STATE_DIR=~/state"}
	p := startBin(t, env, proxy(t, nil, "--scenario", "success")...)
	p.TrySend(acptest.Initialize(1))
	p.Until("1")
	if _, code := p.Finish(); code != 0 {
		t.Fatalf("exit %d: %s", code, p.Stderr.String())
	}
	if _, err := os.Stat(filepath.Join(home, "session.jsonl")); err != nil {
		t.Errorf("recording not in the home directory: %v", err)
	}
	os.MkdirAll(filepath.Join(home, "state"), 0o700)
	os.WriteFile(filepath.Join(home, "state", "attempts.jsonl"), []byte(recordLine(t, "from-env-dir")), 0o600)
	out, stderr, code := runBin(t, env, "", "attempts")
	if code != 0 || !strings.Contains(out, "from-env-dir") {
		t.Errorf("attempts: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
