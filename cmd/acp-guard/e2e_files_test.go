package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/policy"
)

// precious makes a file that must survive a refused open untouched, and a
// check that it did.
func precious(t *testing.T) (path string, check func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(path, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644)
	return path, func() {
		t.Helper()
		data, _ := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if string(data) != "keep me\n" || fi.Mode().Perm() != 0o644 {
			t.Errorf("symlink target changed: %q, mode %v", data, fi.Mode().Perm())
		}
	}
}

// Every file acp-guard writes refuses a symbolic link: the run fails with
// an error naming the path, and the link's target is left as it was.
func TestE2EWritersRefuseSymlinks(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--record", "--log-file"} {
		t.Run(flag, func(t *testing.T) {
			t.Parallel()
			target, check := precious(t)
			link := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := runBin(t, nil, binInit, proxy(t, []string{flag, link}, "--scenario", "success")...)
			if code == 0 || !strings.Contains(stderr, link) || !strings.Contains(stderr, "symbolic link") {
				t.Errorf("exit %d, stderr %q; want a failure naming %s as a symbolic link", code, stderr, link)
			}
			check()
		})
	}
}

// --record never overwrites an existing file unless told to, and creates no
// directories.
func TestE2ERecordRefusesExistingAndMissingDir(t *testing.T) {
	t.Parallel()
	existing, check := precious(t)
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "s.jsonl")
	for _, tt := range []struct{ path, want string }{
		{existing, "already exists"},
		{missing, "does not exist"},
	} {
		_, stderr, code := runBin(t, nil, binInit, proxy(t, []string{"--record", tt.path}, "--scenario", "success")...)
		if code == 0 || !strings.Contains(stderr, tt.want) {
			t.Errorf("--record %s: exit %d, stderr %q; want a failure saying %q", tt.path, code, stderr, tt.want)
		}
	}
	check()
	if _, err := os.Stat(filepath.Dir(missing)); err == nil {
		t.Error("--record created a directory")
	}
	// --record-overwrite replaces it (and narrows it to 0600).
	p := startBin(t, nil, proxy(t, []string{"--record", existing, "--record-overwrite"}, "--scenario", "success")...)
	p.send(binInit)
	p.until("1")
	if _, code := p.finish(); code != 0 {
		t.Fatalf("--record-overwrite: exit %d; stderr %s", code, p.stderr.String())
	}
	data, _ := os.ReadFile(existing)
	fi, _ := os.Stat(existing)
	if !strings.Contains(string(data), `"dir":"meta"`) || fi.Mode().Perm() != 0o600 {
		t.Errorf("overwritten transcript: mode %v, content %q", fi.Mode().Perm(), data)
	}
}

// recordLine is one valid attempt-log line.
func recordLine(t *testing.T, session string) string {
	t.Helper()
	b, err := json.Marshal(policy.Record{Time: time.Date(2026, 9, 15, 12, 0, 0, 0, time.UTC), SessionID: session, RequestID: "7",
		Decision: policy.Decision{Action: policy.ActionStop, Reason: "unsafe"}, Policy: policy.Default(), Outcome: policy.AttemptStopped})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

const tornRecord = `{"time":"2026-09-15T12:00:01Z","sessionId":"torn-sess`

// A torn last line (a crash mid-write) does not make `acp-guard attempts`
// fail: it prints the whole records and names the line it skipped.
func TestE2EAttemptsSkipsTornLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, policy.LogFileName), []byte(recordLine(t, "whole-sess")+tornRecord), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runBin(t, nil, "", "attempts", "--state-dir", dir)
	if code != 0 || !strings.Contains(out, "whole-sess") || strings.Contains(out, "torn-sess") {
		t.Errorf("exit %d, stdout:\n%s\nwant exit 0 and the whole record only", code, out)
	}
	if !strings.Contains(stderr, "skipped line 2: torn record") {
		t.Errorf("stderr %q, want it to name line 2 as a torn record", stderr)
	}
}

// After a crash tore the attempt log's last record, the next session's
// records start on a fresh line: the torn record is the only one lost.
func TestE2EAttemptLogStartsOnFreshLine(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	log := filepath.Join(state, policy.LogFileName)
	if err := os.WriteFile(log, []byte(recordLine(t, "before")+tornRecord), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBin(t, nil, proxy(t, []string{"--policy", retryPolicy(t, 2), "--state-dir", state},
		"--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp")...)
	p.send(binInit, binNew)
	p.until("2")
	p.send(binPrompt(3, "sess-1"))
	frames := p.until("3")
	if last := frames[len(frames)-1]; last.Error != nil {
		t.Fatalf("prompt answered %s", last.raw)
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	out, stderr, code := runBin(t, nil, "", "attempts", "--state-dir", state, "--json")
	if code != 0 {
		t.Fatalf("attempts: exit %d, %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"before"`) || !strings.Contains(lines[1], `"sess-1"`) {
		t.Errorf("records:\n%s\nwant the earlier one and this session's two", out)
	}
	if strings.Count(stderr, "skipped") != 1 || !strings.Contains(stderr, "skipped line 2") {
		t.Errorf("stderr %q, want only the torn line 2 skipped", stderr)
	}
}

// A state directory that is a symbolic link is refused (the failure is
// logged), and nothing is written into its target.
func TestE2EStateDirSymlinkRefused(t *testing.T) {
	t.Parallel()
	target := t.TempDir()
	link := filepath.Join(t.TempDir(), "state")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	p := startBin(t, nil, proxy(t, []string{"--policy", retryPolicy(t, 2), "--state-dir", link},
		"--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp")...)
	p.send(binInit, binNew)
	p.until("2")
	p.send(binPrompt(3, "sess-1"))
	p.until("3")
	p.finish()
	if !strings.Contains(p.stderr.String(), "symbolic link") || !strings.Contains(p.stderr.String(), link) {
		t.Errorf("stderr %q, want the refused state directory named", p.stderr.String())
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("files written through the link: %v", ents)
	}
}

// --record with {time}, {pid} and {session} gives one file per run, named
// after the run's session.
func TestE2ERecordPerRunPattern(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pattern := filepath.Join(dir, "{time}-{pid}-{session}.jsonl")
	for range 2 {
		p := startBin(t, nil, proxy(t, []string{"--record", pattern}, "--scenario", "success")...)
		p.send(binInit, binNew)
		p.until("2")
		if _, code := p.finish(); code != 0 {
			t.Fatalf("exit %d: %s", code, p.stderr.String())
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2 {
		t.Fatalf("got %d files, want one per run: %v", len(ents), ents)
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, "-sess-1.jsonl") || strings.Contains(name, "{") || strings.Contains(name, "pending") {
			t.Errorf("file %q: want <time>-<pid>-sess-1.jsonl", name)
		}
		data, _ := os.ReadFile(filepath.Join(dir, name))
		if !strings.Contains(string(data), `"dir":"meta"`) || !strings.Contains(string(data), "session/new") {
			t.Errorf("%s: not a whole transcript:\n%s", name, data)
		}
	}
	// Without a session the file keeps its pending name, and says so.
	p := startBin(t, nil, proxy(t, []string{"--record", filepath.Join(dir, "solo-{session}.jsonl")}, "--scenario", "success")...)
	p.send(binInit)
	p.until("1")
	p.finish()
	if m, _ := filepath.Glob(filepath.Join(dir, "solo-pending-*.jsonl")); len(m) != 1 || !strings.Contains(p.stderr.String(), "pending name") {
		t.Errorf("pending files %v, stderr %q", m, p.stderr.String())
	}
}

// A recording stores the policy it ran under, and replay decides with it
// unless --policy overrides it.
func TestE2EReplayUsesTheRecordedPolicy(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "s.jsonl")
	p := startBin(t, nil, proxy(t, []string{"--record", rec, "--policy", retryPolicy(t, 2), "--state-dir", t.TempDir()},
		"--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp")...)
	p.send(binInit, binNew)
	p.until("2")
	p.send(binPrompt(3, "sess-1"))
	if f := p.until("3"); f[len(f)-1].Error != nil {
		t.Fatalf("live prompt answered %s", f[len(f)-1].raw)
	}
	p.finish()
	data, _ := os.ReadFile(rec)
	if !strings.Contains(strings.SplitN(string(data), "\n", 2)[0], `"policy":{"version":1,"transient":{"retry":{"enabled":true,"max_retries":2`) {
		t.Errorf("meta event lacks the policy: %s", strings.SplitN(string(data), "\n", 2)[0])
	}
	outcome := func(args ...string) string {
		out, stderr, code := runBin(t, nil, "", append([]string{"replay", "--json"}, args...)...)
		var turn struct {
			Outcome string `json:"outcome"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &turn) != nil {
			t.Fatalf("replay %v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
		}
		return turn.Outcome
	}
	if got := outcome(rec); got != "retried" {
		t.Errorf("replay with the recorded policy: outcome %q, want retried", got)
	}
	if got := outcome("--policy", writeTemp(t, "stop.json", `"stop"`), rec); got == "retried" {
		t.Errorf("replay with --policy stop: outcome %q, want the failure reported", got)
	}
}

// A recorded provider failure served behind acp-guard with a retry policy
// reproduces the failure on every retry (not "agent exited"), and the
// client gets the classified ProviderError once the retries are spent —
// with acp-guard in front of the served agent in one process (replay
// --serve --policy) or as another process (--agent-only behind acp-guard).
func TestE2EServeReproducesFailureBehindPolicy(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "s.jsonl")
	p := startBin(t, nil, proxy(t, []string{"--record", rec}, "--scenario", "claude-error")...)
	p.send(binInit, binNew)
	p.until("2")
	p.send(binPrompt(3, "sess-1"))
	p.until("3")
	p.finish()
	data, _ := os.ReadFile(rec)
	if !strings.Contains(string(data), `"client_closed":true`) {
		t.Errorf("the recorded exit is not marked as after the client closed:\n%s", data)
	}

	for _, argv := range [][]string{
		{"replay", "--serve", "--policy", retryPolicy(t, 2), "--grace", "500ms", "--no-delay", rec},
		{"--policy", retryPolicy(t, 2), "--state-dir", t.TempDir(), "--grace", "500ms", "--",
			testbinPath(t), "replay", "--serve", "--agent-only", "--no-delay", rec},
	} {
		s := startBin(t, nil, argv...)
		s.send(binInit, binNew)
		s.until("2")
		s.send(binPrompt(3, "sess-1"))
		frames := s.until("3")
		last := frames[len(frames)-1]
		if last.Error == nil || !strings.Contains(string(last.Error.Data), `"code":"provider_overloaded"`) || !strings.Contains(string(last.Error.Data), `"attempt":2`) {
			t.Errorf("%v: prompt answered %s; want the 529 classified after 2 retries", argv[:2], last.raw)
		}
		if _, code := s.finish(); code != 0 {
			t.Errorf("%v: exit %d; stderr:\n%s", argv[:2], code, s.stderr.String())
		}
	}
}
