package main

import (
	"encoding/json"
	"github.com/acp-guard/acp-guard/internal/acptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// wireError checks that out is exactly one JSON-RPC error answering id 1
// whose message names want, and returns it.
func wireError(t *testing.T, out, want string) {
	t.Helper()
	var r startupReply
	if err := json.Unmarshal([]byte(out), &r); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("stdout %q: want exactly one JSON-RPC response (%v)", out, err)
	}
	if string(r.ID) != "1" || r.Error.Code != -32603 || !strings.Contains(r.Error.Message, want) || !strings.Contains(r.Error.Data.AcpGuard.ConfigError, want) {
		t.Errorf("response %s: want an error to id 1 naming %q", out, want)
	}
}

// Every configuration mistake of the proxy — flags included — is answered
// on the wire at the client's first request with the field named, said on
// stderr, and exits 2: nothing is left to a dead pipe.
func TestE2EConfigMistakesOnTheWire(t *testing.T) {
	t.Parallel()
	policyFile := acptest.RetryPolicy(t, 3, 1)
	notADir := acptest.WriteFile(t, "file", "x")
	agent := func(flags ...string) []string { return proxy(t, flags, "--scenario", "success") }
	for _, tt := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"unknown flag", agent("--bogus"), nil, "unknown flag: --bogus"},
		{"near-miss flag", agent("--polcy", policyFile), nil, "did you mean --policy"},
		{"bad duration", agent("--grace", "abc"), nil, `"--grace"`},
		{"bad number", agent("--max-line", "lots"), nil, `"--max-line"`},
		{"bare flag at the end", []string{"--policy"}, nil, "flag needs an argument: --policy"},
		{"bare flag before --", append([]string{"--policy"}, agent()...), nil, "flag needs an argument: --policy"},
		{"run: unknown flag", append([]string{"run", "--bogus"}, agent()...), nil, "unknown flag: --bogus"},
		{"undefined variable in a path", agent("--record", "$NO_SUCH_DIR_VAR/{pid}.jsonl"), nil, "$NO_SUCH_DIR_VAR not set"},
		{"undefined variable from the environment", agent(), []string{"ACP_GUARD_RECORD=$NO_SUCH_DIR_VAR/x.jsonl"}, "--record"},
		{"state directory under a file", agent("--policy", policyFile, "--state-dir", filepath.Join(notADir, "state")), nil, "--state-dir"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, stderr, code := runBin(t, tt.env, acptest.Initialize(1), tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
			wireError(t, out, tt.want)
		})
	}
	// Not the proxy: a subcommand's bad flag is a usage error on stderr,
	// and nothing is written to its stdout.
	out, stderr, code := runBin(t, nil, acptest.Initialize(1), "policy", "check", "--bogus", policyFile)
	if code != 2 || out != "" || !strings.Contains(stderr, "unknown flag: --bogus") {
		t.Errorf("policy check --bogus: exit %d, stdout %q, stderr %q; want 2, nothing, the error", code, out, stderr)
	}
}

// A bare acp-guard has no agent to start: usage on stderr (never on
// stdout, the protocol's channel), the client's request answered, exit 2.
func TestE2EBareNoAgent(t *testing.T) {
	t.Parallel()
	out, stderr, code := runBin(t, nil, acptest.Initialize(1))
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr, "Usage:") || !strings.Contains(stderr, "no agent command given") {
		t.Errorf("stderr %q: want the usage and the problem", stderr)
	}
	if strings.Contains(out, "Usage") {
		t.Errorf("usage on stdout: %q", out)
	}
	wireError(t, out, "no agent command given")
	// Nothing to answer: nothing on stdout.
	out, _, code = runBin(t, nil, "")
	if code != 2 || out != "" {
		t.Errorf("without a request: exit %d, stdout %q; want 2 and nothing", code, out)
	}
}

// An ACP_GUARD_* variable that names no setting is a warning with the
// nearest name; the session runs.
func TestE2EUnknownEnvWarns(t *testing.T) {
	t.Parallel()
	env := []string{"ACP_GUARD_POLCY=/x.json", "ACP_GUARD_LOGLEVEL=debug", "ACP_GUARD_ZZZZZZZZ=1", "ACP_GUARD_TEST_BIN=" + acptest.Bin(t)}
	p := startBin(t, env, proxy(t, nil, "--scenario", "success")...)
	p.Send(acptest.Initialize(1))
	p.Until("1")
	if _, code := p.Finish(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	log := p.Stderr.String()
	for _, want := range []string{
		`msg="unknown environment variable ignored" name=ACP_GUARD_LOGLEVEL did_you_mean=ACP_GUARD_LOG_LEVEL`,
		`msg="unknown environment variable ignored" name=ACP_GUARD_POLCY did_you_mean=ACP_GUARD_POLICY`,
		`msg="unknown environment variable ignored" name=ACP_GUARD_ZZZZZZZZ`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, "ACP_GUARD_TEST_BIN") {
		t.Errorf("a known variable was warned about:\n%s", log)
	}
}

// A fallback model the agent does not offer in session/new is a warning
// and a notice for the session, after the agent's own answer.
func TestE2EFallbackNotOffered(t *testing.T) {
	t.Parallel()
	p := startBin(t, nil, proxy(t, []string{"--fallback-models", "model-b,model-x", "--state-dir", filepath.Join(t.TempDir(), "s")}, "--scenario", "success")...)
	p.Send(acptest.Initialize(1), acptest.SessionNew(2))
	p.Until("2")
	f, ok := p.TryNext()
	if !ok || f.Method != "session/update" || !strings.Contains(string(f.Raw), `"warning":{"code":"fallback_model_not_offered","models":["model-x"]}`) ||
		!strings.Contains(string(f.Raw), "model-x not offered") {
		t.Fatalf("after session/new: %s, want the warning notice for model-x", f.Raw)
	}
	p.Finish()
	if log := p.Stderr.String(); !strings.Contains(log, `level=WARN msg="fallback model not offered by the agent; it will not be switched to" model=model-x`) {
		t.Errorf("no warning on stderr:\n%s", log)
	}
}

// --record templates never collide: a name taken gets the next sequence
// number — {time} of two agents started in the same second, {session}
// of a session recorded before.
func TestE2ERecordTemplateNeverCollides(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Every name {time} can take from now until the watchdog would have
	// killed the run is taken already.
	start := time.Now().UTC().Add(-time.Second)
	for d := time.Duration(0); d <= acptest.DefaultWatchdog+2*time.Second; d += time.Second {
		os.WriteFile(filepath.Join(dir, "t-"+start.Add(d).Format("20060102T150405Z")+".jsonl"), nil, 0o600)
	}
	os.WriteFile(filepath.Join(dir, "s-sess-1.jsonl"), []byte("older"), 0o600)
	for _, tmpl := range []string{"t-{time}.jsonl", "s-{session}.jsonl"} {
		p := startBin(t, nil, proxy(t, []string{"--record", filepath.Join(dir, tmpl)}, "--scenario", "success")...)
		p.Send(acptest.Initialize(1), acptest.SessionNew(2))
		p.Until("2")
		if _, code := p.Finish(); code != 0 {
			t.Fatalf("%s: exit %d: %s", tmpl, code, p.Stderr.String())
		}
	}
	got, _ := filepath.Glob(filepath.Join(dir, "*-2.jsonl"))
	if len(got) != 2 {
		t.Fatalf("recordings with a sequence number: %q, want one for each template", got)
	}
	for _, g := range got {
		if fi, err := os.Stat(g); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v, want the recording", g, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "s-sess-1.jsonl")); string(b) != "older" {
		t.Errorf("the earlier recording was overwritten")
	}
}

// A clean close is quiet and fast: with nothing in flight when the client
// closes stdin, an agent that ignores EOF (codex-acp, claude-agent-acp;
// here the demo agent's "hang") gets SIGTERM at once — long before the
// hour of grace — and acp-guard exits 0 without a WARN. With a prompt in
// flight the grace period still applies.
func TestE2EQuietFastShutdown(t *testing.T) {
	t.Parallel()
	p := startBin(t, nil, proxy(t, []string{"--grace", "1h", "--log-level", "info"}, "--scenario", "hang")...)
	p.Send(acptest.Initialize(1), acptest.SessionNew(2))
	p.Until("2")
	closed := time.Now()
	_, code := p.Finish()
	elapsed := time.Since(closed)
	log := p.Stderr.String()
	if code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	for _, want := range []string{"idle=true", "sending SIGTERM now", "signal=SIGTERM"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "level=WARN") {
		t.Errorf("a clean close logged a warning:\n%s", log)
	}
	t.Logf("clean close with an agent that ignores EOF: stdin closed → acp-guard exited in %s (grace 1h)", elapsed.Round(time.Millisecond))

	// A prompt in flight: the agent is given the grace period first.
	p = startBin(t, nil, proxy(t, []string{"--grace", "1s", "--log-level", "info"}, "--scenario", "hang", "--ignore-cancel")...)
	p.Send(acptest.Initialize(1), acptest.SessionNew(2))
	p.Until("2")
	p.Send(acptest.Prompt(3, "sess-1"))
	p.Finish()
	if log := p.Stderr.String(); !strings.Contains(log, "idle=false") || !strings.Contains(log, "agent still running after grace; sending SIGTERM") {
		t.Errorf("with a prompt in flight, want TERM after the grace period:\n%s", log)
	}
}
