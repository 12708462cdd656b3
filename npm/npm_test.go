//go:build !windows

// Package npm holds the test of acp-guard's npm packages (npm/README.md):
// the tarballs npm/pack.mjs made, installed offline into a fresh folder,
// run through npx as an editor runs them.
//
// make test-npm builds the binary (make build's flags), packs it with
// npm/pack.mjs and runs this test with
//
//	ACP_GUARD_TEST_NPM_PACKS    the folder of the tarballs (this machine's
//	                       platform package and the launcher)
//	ACP_GUARD_TEST_NPM_VERSION  the version they and the binary carry
//	ACP_GUARD_TEST_BIN     the binary that was packed (internal/testbin)
//
// Without ACP_GUARD_TEST_NPM_PACKS (go test ./...) it is skipped. It is a
// POSIX test (SIGTERM to the launcher, /proc); the launcher's Windows path
// (no forwarding: the console's Ctrl-C reaches acp-guard itself) is not run
// here.
package npm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// install is one offline npm install of tarballs into a fresh folder.
type install struct {
	dir string   // the folder npm installed into (node_modules inside)
	env []string // npm with an empty cache of the test's own, offline
}

// npmInstall installs tarballs into a new folder with npm's cache in
// another new one and npm offline, so nothing can come from a registry
// (and the registry named is a closed port, should npm try).
func npmInstall(t *testing.T, tarballs ...string) install {
	t.Helper()
	in := install{dir: t.TempDir()}
	in.env = acptest.CleanEnv(t,
		"npm_config_cache="+t.TempDir(),
		"npm_config_offline=true",
		"npm_config_registry=http://127.0.0.1:9/",
		"npm_config_update_notifier=false",
		"npm_config_fund=false",
		"npm_config_audit=false")
	args := append([]string{"install", "--offline", "--no-audit", "--no-fund"}, tarballs...)
	start := time.Now()
	cmd := exec.Command("npm", args...)
	cmd.Dir, cmd.Env = in.dir, in.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("npm install --offline of %d tarballs: %v", len(tarballs), time.Since(start).Round(time.Millisecond))
	return in
}

// packs returns the launcher's tarball and the platform packages' (each
// acp-guard-<os>-<cpu>-VERSION.tgz) in ACP_GUARD_TEST_NPM_PACKS.
func packs(t *testing.T) (version, launcher string, platforms []string) {
	dir := os.Getenv("ACP_GUARD_TEST_NPM_PACKS")
	if dir == "" {
		t.Skip("make test-npm runs this test (ACP_GUARD_TEST_NPM_PACKS names the packed tarballs)")
	}
	version = os.Getenv("ACP_GUARD_TEST_NPM_VERSION")
	if version == "" {
		t.Fatal("ACP_GUARD_TEST_NPM_VERSION is not set")
	}
	launcher = filepath.Join(dir, "acp-guard-"+version+".tgz")
	if _, err := os.Stat(launcher); err != nil {
		t.Fatal(err)
	}
	all, _ := filepath.Glob(filepath.Join(dir, "acp-guard-*-"+version+".tgz"))
	for _, f := range all {
		if f != launcher {
			platforms = append(platforms, f)
		}
	}
	if len(platforms) == 0 {
		t.Fatalf("no platform package in %s", dir)
	}
	return version, launcher, platforms
}

// hostPackage is the platform package npm picks on this machine.
func hostPackage(t *testing.T) string {
	out, err := exec.Command("node", "-p", `"acp-guard-" + process.platform + "-" + process.arch`).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// session is one ACP conversation driven against a process.
type session struct {
	name  string
	flags []string // acp-guard's
	agent []string // the demo agent's arguments
	skip  bool     // the agent writes lines that are not JSON
	drive func(p *acptest.Proc)
}

// converse opens a session and runs one prompt to its answer.
func converse(p *acptest.Proc) {
	_, sid := p.Open()
	p.Send(acptest.Prompt(3, sid))
	p.Until("3")
}

// run drives s against argv (acp-guard, or the launcher before its
// arguments) and returns every stdout line as it came, and the exit code.
func (s session) run(t *testing.T, env []string, dir string, argv []string) ([]byte, int) {
	p := acptest.Start(t, argv, acptest.Options{Env: env, Dir: dir, Record: true, SkipInvalid: s.skip})
	s.drive(p)
	_, code := p.Finish()
	return bytes.Join(p.Lines(), nil), code
}

// clockFields are the values that name the wall clock (a retry's
// deadline, a failure's time): the one part of a frame that differs
// between two runs of the same session, so that part is blanked out,
// keeping its length, before frames are compared.
var clockFields = regexp.MustCompile(`"(deadline|occurredAt)":"[^"]*"`)

func maskClock(b []byte) []byte {
	return clockFields.ReplaceAllFunc(b, func(m []byte) []byte {
		i := bytes.IndexByte(m, ':')
		return append(m[:i+1:i+1], bytes.Repeat([]byte("#"), len(m)-i-1)...)
	})
}

func TestE2ENpmPackages(t *testing.T) {
	version, launcher, platforms := packs(t)
	bin := acptest.Bin(t)
	host := hostPackage(t)
	start := time.Now()
	in := npmInstall(t, append([]string{launcher}, platforms...)...)
	npx := func(args ...string) []string { return append([]string{"npx", "acp-guard"}, args...) }

	// npm installed the launcher and this platform's binary, executable,
	// and none of the other platforms' packages (they are not there to
	// fetch, and would not fit).
	exe := filepath.Join(in.dir, "node_modules", host, "bin", "acp-guard")
	if st, err := os.Stat(exe); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("%s: %v (mode %v)", exe, err, st.Mode())
	}
	mods, _ := filepath.Glob(filepath.Join(in.dir, "node_modules", "acp-guard*"))
	if len(mods) != 2 {
		t.Errorf("node_modules holds %q, want acp-guard and %s", mods, host)
	}

	t.Run("version", func(t *testing.T) {
		direct, _, code := acptest.Run(t, []string{bin, "--version"}, acptest.Options{Env: in.env}, "")
		viaNpx, stderr, npxCode := acptest.Run(t, npx("--version"), acptest.Options{Env: in.env, Dir: in.dir}, "")
		if code != 0 || npxCode != 0 || viaNpx != direct || stderr != "" {
			t.Errorf("npx acp-guard --version: exit %d, stdout %q, stderr %q; acp-guard --version: exit %d, %q", npxCode, viaNpx, stderr, code, direct)
		}
		if want := "acp-guard " + version + " (commit "; !strings.HasPrefix(viaNpx, want) {
			t.Errorf("npx acp-guard --version = %q, want it to start with %q", viaNpx, want)
		}
	})

	// The same sessions with acp-guard run directly and through npx: the
	// client sees the same bytes and the same exit code (the agent's 3
	// after a crash).
	sessions := []session{
		{name: "stream", agent: []string{"--scenario", "stream", "--count", "3000", "--size", "256"}, drive: converse},
		{name: "huge-line", agent: []string{"--scenario", "huge-line", "--size", "3000000"}, drive: converse},
		{name: "non-json", agent: []string{"--scenario", "non-json"}, skip: true, drive: converse},
		{name: "cursor-failure", agent: []string{"--scenario", "cursor-retriable", "--agent-name", "cursor-agent"}, drive: converse},
		{name: "agent-crash", agent: []string{"--scenario", "crash", "--exit-code", "3"}, drive: converse},
		{name: "recovered-failure", flags: []string{"--policy", acptest.RetryPolicy(t, 2, 1)},
			agent: []string{"--scenario", "fail-then-succeed", "--fail", "1"}, drive: converse},
	}
	for _, s := range sessions {
		t.Run("session/"+s.name, func(t *testing.T) {
			argv := acptest.GuardArgv(t, s.flags, acptest.DemoAgent(t, s.agent...)...)
			want, wantCode := s.run(t, in.env, "", argv)
			got, gotCode := s.run(t, in.env, in.dir, npx(argv[1:]...))
			if gotCode != wantCode {
				t.Errorf("exit code through npx %d, directly %d", gotCode, wantCode)
			}
			if len(want) == 0 {
				t.Fatal("the direct session wrote nothing")
			}
			if !bytes.Equal(maskClock(got), maskClock(want)) {
				acptest.EqualFrames(t, "through npx vs directly", lines(maskClock(got)), lines(maskClock(want)))
				t.Errorf("stdout through npx (%d bytes) differs from stdout directly (%d bytes)", len(got), len(want))
			}
		})
	}

	// No byte passes through the launcher: acp-guard's stdin, stdout and
	// stderr are the launcher's own (the same pipes, read from /proc), and
	// its stdout is the pipe this test reads.
	t.Run("stdio-inherited", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("reads /proc")
		}
		argv := acptest.GuardArgv(t, nil, acptest.DemoAgent(t)...)
		p := acptest.Start(t, npx(argv[1:]...), acptest.Options{Env: in.env, Dir: in.dir})
		p.Open()
		m := regexp.MustCompile(`msg="agent started" pid=(\d+)`).FindStringSubmatch(p.WaitStderr("agent started"))
		agent, _ := strconv.Atoi(m[1])
		_, guard, _, ok1 := acptest.ProcStat(agent)
		_, launcherPid, _, ok2 := acptest.ProcStat(guard)
		if !ok1 || !ok2 {
			t.Fatalf("agent %d: no acp-guard or launcher above it", agent)
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", launcherPid))
		if argv0, _, _ := bytes.Cut(cmdline, []byte{0}); filepath.Base(string(argv0)) != "node" || !bytes.Contains(cmdline, []byte("/.bin/acp-guard\x00")) {
			t.Fatalf("acp-guard's parent %d is %q, not the launcher", launcherPid, cmdline)
		}
		fd := func(pid, n int) string {
			l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, n))
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		for n := 0; n <= 2; n++ {
			if g, l := fd(guard, n), fd(launcherPid, n); g != l || !strings.HasPrefix(g, "pipe:") {
				t.Errorf("fd %d: acp-guard has %s, the launcher %s; want the launcher's own pipe", n, g, l)
			}
		}
		if out, ok := p.RawOut().(*os.File); ok {
			if g, mine := fd(guard, 1), fd(os.Getpid(), int(out.Fd())); g != mine {
				t.Errorf("acp-guard's stdout is %s, the pipe this test reads is %s", g, mine)
			}
		}
		if _, code := p.Finish(); code != 0 {
			t.Errorf("exit %d", code)
		}
	})

	// SIGTERM to the launcher ends the session as SIGTERM to acp-guard
	// does: the same frames, the same exit code (128+15: the agent died of
	// the forwarded signal).
	t.Run("sigterm", func(t *testing.T) {
		s := session{agent: []string{"--scenario", "stall-after-text", "--delay", "60s"}, drive: func(p *acptest.Proc) {
			_, sid := p.Open()
			p.Send(acptest.Prompt(3, sid))
			p.UntilMatch(func(f acptest.Frame) bool { return bytes.Contains(f.Raw, []byte("agent_message_chunk")) })
			p.Signal(syscall.SIGTERM)
		}}
		argv := acptest.GuardArgv(t, nil, acptest.DemoAgent(t, s.agent...)...)
		want, wantCode := s.run(t, in.env, "", argv)
		launch := filepath.Join(in.dir, "node_modules", ".bin", "acp-guard")
		got, gotCode := s.run(t, in.env, in.dir, append([]string{launch}, argv[1:]...))
		if gotCode != wantCode || wantCode != 128+int(syscall.SIGTERM) {
			t.Errorf("SIGTERM: exit %d through the launcher, %d directly; want both %d", gotCode, wantCode, 128+int(syscall.SIGTERM))
		}
		if !bytes.Equal(maskClock(got), maskClock(want)) {
			acptest.EqualFrames(t, "after SIGTERM, through the launcher vs directly", lines(maskClock(got)), lines(maskClock(want)))
		}
	})

	// Installed without its platform package, the launcher says which
	// package is missing and how to install it — on stderr, and to the
	// editor in an answer to its first request — and exits 127.
	t.Run("missing-package", func(t *testing.T) {
		bare := npmInstall(t, launcher)
		want := "npm install " + host + "@" + version
		out, stderr, code := acptest.Run(t, npx(argvAgent(t)...), acptest.Options{Env: bare.env, Dir: bare.dir},
			acptest.Notification("session/cancel", `{"sessionId":"x"}`)+acptest.Initialize(7))
		if code != 127 || !strings.Contains(stderr, host+"@"+version+", which holds the acp-guard binary") || !strings.Contains(stderr, want) {
			t.Errorf("without %s: exit %d, stderr %q; want 127 and %q", host, code, stderr, want)
		}
		f, err := acptest.Parse([]byte(out))
		if err != nil || !f.Answers("7") || f.Error == nil || f.Error.Code != -32603 || !strings.Contains(f.Error.Message, want) || strings.Count(out, "\n") != 1 {
			t.Errorf("without %s, initialize was answered %q; want one -32603 error naming %q", host, out, want)
		}
		// No request (stdin closed at once): nothing on stdout.
		if out, _, code := acptest.Run(t, npx("--version"), acptest.Options{Env: bare.env, Dir: bare.dir}, ""); code != 127 || out != "" {
			t.Errorf("without %s, no request: exit %d, stdout %q", host, code, out)
		}
	})

	// On a platform no package is made for, it says so and how to build
	// acp-guard from source, and exits 127 (process.platform is faked).
	t.Run("unsupported-platform", func(t *testing.T) {
		fake := acptest.WriteFile(t, "fake-platform.js", `Object.defineProperty(process, "platform", { value: "aix" });`+"\n")
		launch := filepath.Join(in.dir, "node_modules", ".bin", "acp-guard")
		env := append(append([]string(nil), in.env...), "NODE_OPTIONS=--require="+fake)
		out, stderr, code := acptest.Run(t, []string{launch, "--version"}, acptest.Options{Env: env}, "")
		if code != 127 || out != "" || !strings.Contains(stderr, "no acp-guard binary for aix/") || !strings.Contains(stderr, "go install github.com/acp-guard/acp-guard/cmd/acp-guard@v"+version) {
			t.Errorf("on aix: exit %d, stdout %q, stderr %q", code, out, stderr)
		}
	})
	t.Logf("the npm packages' test took %v", time.Since(start).Round(time.Millisecond))
}

// argvAgent is acp-guard's arguments around the demo agent.
func argvAgent(t *testing.T) []string {
	return acptest.GuardArgv(t, nil, acptest.DemoAgent(t)...)[1:]
}

func lines(b []byte) []string {
	return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
}
