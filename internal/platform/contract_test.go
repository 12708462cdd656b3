package platform

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The contract tests: each behaviour of the layer, the same test on every
// OS (Linux natively, Windows under Wine; macOS compiled and vetted). The
// processes are this test binary again, in a role named by roleEnv.

const roleEnv = "PLATFORM_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
		os.Exit(m.Run())
	case "guard":
		roleGuard()
	case "agent":
		roleAgent()
	case "sleeper":
		roleSleeper()
	}
	os.Exit(2)
}

// roleGuard starts an agent the way acp-guard does (Prepare, Attach),
// prints the agent's line (its pid and its child's), and waits to be
// killed; with GUARD_CLOSE=1 it waits for the agent instead and closes
// the group (the normal end).
func roleGuard() {
	if os.Getenv("GUARD_WATCHDOG") == "1" {
		setWatchdog(true)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"=agent")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	Prepare(cmd)
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	g, err := Attach(cmd)
	if err != nil {
		fail(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		fail(err)
	}
	fmt.Print(line)
	if os.Getenv("GUARD_CLOSE") == "1" {
		_ = cmd.Wait()
		g.Close()
		fmt.Println("closed")
		os.Exit(0)
	}
	time.Sleep(time.Hour) // until killed
}

// roleAgent ignores the stop signals and the end of its input (as
// codex-acp and claude-agent-acp ignore stdin EOF), starts a child of its
// own and prints "agent-pid child-pid"; with AGENT_EXIT=1 it exits then,
// leaving the child an orphan.
func roleAgent() {
	signal.Ignore(StopSignals...)
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), roleEnv+"=sleeper")
	if err := child.Start(); err != nil {
		fail(err)
	}
	fmt.Printf("%d %d\n", os.Getpid(), child.Process.Pid)
	if os.Getenv("AGENT_EXIT") == "1" {
		os.Exit(0)
	}
	time.Sleep(time.Hour) // until killed
}

func roleSleeper() {
	signal.Ignore(StopSignals...)
	time.Sleep(time.Hour)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "role:", err)
	os.Exit(3)
}

// startGuard runs the guard role and reads the agent's pids.
func startGuard(t *testing.T, env ...string) (guard *exec.Cmd, agent, child int, out *bufio.Reader) {
	t.Helper()
	guard = exec.Command(os.Args[0])
	guard.Env = append(append(os.Environ(), roleEnv+"=guard"), env...)
	guard.Stderr = os.Stderr
	r, err := guard.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := guard.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = guard.Process.Kill(); _ = guard.Wait() })
	out = bufio.NewReader(r)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("guard: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 2 {
		t.Fatalf("guard printed %q", line)
	}
	agent, _ = strconv.Atoi(f[0])
	child, _ = strconv.Atoi(f[1])
	t.Cleanup(func() { _ = Kill(child, SIGKILL); _ = Kill(agent, SIGKILL) })
	return guard, agent, child, out
}

// waitGone waits until pid has exited, up to a deadline that only a
// broken contract reaches (the kernel acts at once; the deadline bounds a
// failing test, it is not what passes one).
func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !Exited(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The agent dies with acp-guard, also when acp-guard is killed outright
// and the agent ignores the stop signals and its input's end.
func TestAgentDiesWhenGuardIsKilled(t *testing.T) {
	guard, agent, _, _ := startGuard(t)
	if err := guard.Process.Kill(); err != nil { // SIGKILL; TerminateProcess
		t.Fatal(err)
	}
	_ = guard.Wait()
	waitGone(t, "agent", agent)
}

// The same through the watchdog, macOS's design; run on Linux too, where
// the parent-death signal stands in for kqueue's NOTE_EXIT.
func TestAgentDiesWhenGuardIsKilledWatchdog(t *testing.T) {
	if !watchdogAvailable {
		t.Skip("the watchdog is the macOS design (and tested on Linux); Windows uses a job object")
	}
	guard, agent, child, _ := startGuard(t, "GUARD_WATCHDOG=1")
	if err := guard.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = guard.Wait()
	waitGone(t, "agent", agent)
	waitGone(t, "the agent's child", child) // the whole group
}

// What the agent started dies with the group at the normal end, also once
// the agent itself is gone (an orphan).
func TestOrphansDieWithTheGroup(t *testing.T) {
	_, agent, child, out := startGuard(t, "GUARD_CLOSE=1", "AGENT_EXIT=1")
	if line, err := out.ReadString('\n'); err != nil || line != "closed\n" {
		t.Fatalf("guard: %q, %v", line, err)
	}
	waitGone(t, "agent", agent)
	waitGone(t, "the agent's orphan", child)
}

// A stop reaches the agent's group: a signal on POSIX, CTRL_BREAK_EVENT
// on Windows (which Go's runtime hands to the agent as os.Interrupt).
func TestStopReachesTheGroup(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStoppable$")
	cmd.Env = append(os.Environ(), "PLATFORM_STOPPABLE=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	Prepare(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g, err := Attach(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r := bufio.NewReader(out)
	if line, _ := r.ReadString('\n'); line != "ready\n" {
		t.Fatalf("helper: %q", line)
	}
	if err := g.Signal(SIGTERM); err != nil {
		if why := noConsoleEvents(); why != "" {
			t.Skipf("%s: %v", why, err)
		}
		t.Fatal(err)
	}
	line, _ := r.ReadString('\n')
	if !strings.HasPrefix(line, "stopped by ") {
		t.Fatalf("helper after the stop: %q", line)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 7 {
		t.Errorf("exit code %d, want 7", code)
	}
}

// TestHelperStoppable is the agent of TestStopReachesTheGroup.
func TestHelperStoppable(t *testing.T) {
	if os.Getenv("PLATFORM_STOPPABLE") != "1" {
		t.Skip("a helper process")
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, StopSignals...)
	fmt.Println("ready")
	s := <-sigs
	fmt.Printf("stopped by %v\n", s)
	os.Exit(7)
}

// SIGKILL ends the group even when it ignores every stop.
func TestKillEndsTheGroup(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"=agent")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	Prepare(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g, err := Attach(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	line, _ := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if len(f) != 2 {
		t.Fatalf("agent printed %q", line)
	}
	child, _ := strconv.Atoi(f[1])
	if err := g.Signal(SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if sig, ok := ExitSignal(cmd.ProcessState); runtime.GOOS != "windows" && (!ok || sig != SIGKILL) {
		t.Errorf("agent ended %v, want SIGKILL", cmd.ProcessState)
	}
	waitGone(t, "the agent's child", child)
}

// Waiting says how many bytes wait on a pipe and what is left of a file,
// and -1 for a reader that cannot say.
func TestWaiting(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if n := Waiting(r); n != 0 {
		t.Errorf("empty pipe: %d waiting, want 0", n)
	}
	if _, err := w.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if n := Waiting(r); n != 6 {
		t.Errorf("pipe: %d waiting, want 6", n)
	}
	f, err := os.Create(filepath.Join(tempDir(t), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(3, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if n := Waiting(f); n != 7 {
		t.Errorf("file at 3 of 10: %d waiting, want 7", n)
	}
	if n := Waiting(bytes.NewReader(nil)); n != -1 {
		t.Errorf("a reader without a descriptor: %d, want -1", n)
	}
}

// MapAnon maps memory apart from the heap where the OS has it; elsewhere
// it says so, and the caller uses the heap.
func TestMapAnon(t *testing.T) {
	b, err := MapAnon(1 << 30)
	if runtime.GOOS == "windows" {
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("MapAnon on Windows: %v, want ErrUnsupported", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	b[0], b[len(b)-1] = 1, 2 // only these pages are backed
	if err := Unmap(b); err != nil {
		t.Fatal(err)
	}
}

// A pty opens where the OS has one; on Windows the error says why not.
func TestOpenPTY(t *testing.T) {
	m, tty, err := OpenPTY()
	if runtime.GOOS == "windows" {
		if err == nil || !strings.Contains(err.Error(), "creack/pty has no Windows support") {
			t.Fatalf("OpenPTY on Windows: %v", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	tty.Close()
}

// OpenFile never follows a link as the last element of the path, creates,
// appends and refuses to overwrite like os.OpenFile.
func TestOpenFile(t *testing.T) {
	dir := tempDir(t)
	p := filepath.Join(dir, "f")
	f, err := OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("a\n")
	f.Close()
	if _, err := OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("exclusive create of an existing file: %v, want ErrExist", err)
	}
	f, err = OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("b\n")
	f.Close()
	if b, _ := os.ReadFile(p); string(b) != "a\nb\n" {
		t.Errorf("after append: %q", b)
	}
	if _, err := OpenFile(filepath.Join(dir, "missing"), os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
	if _, err := OpenFile(dir, os.O_RDWR, 0); err == nil {
		t.Errorf("a directory opened for writing")
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(p, link); err != nil {
		t.Skipf("cannot make a symbolic link here (%v): the refusal is not tested", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		// Wine 8's CreateSymbolicLink reports success and makes nothing.
		t.Skipf("os.Symlink reported success but made no link (%v, %v): the refusal is not tested", fi, err)
	}
	for _, flag := range []int{os.O_RDONLY, os.O_RDWR | os.O_CREATE, os.O_WRONLY | os.O_APPEND | os.O_CREATE} {
		if f, err := OpenFile(link, flag, 0o600); !errors.Is(err, ELOOP) {
			if f != nil {
				f.Close()
			}
			t.Errorf("through a symlink (flag %#x): %v, want ELOOP", flag, err)
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "a\nb\n" {
		t.Errorf("the link's target changed: %q", b)
	}
}

// The default folders are absolute; on Linux the XDG layout.
func TestDefaultFolders(t *testing.T) {
	for name, f := range map[string]func() (string, error){"StateHome": StateHome, "ConfigHome": ConfigHome} {
		d, err := f()
		if err != nil || !filepath.IsAbs(d) {
			t.Errorf("%s: %q, %v", name, d, err)
		}
	}
	if runtime.GOOS == "linux" {
		home, _ := os.UserHomeDir()
		if d, _ := StateHome(); d != filepath.Join(home, ".local", "state") {
			t.Errorf("StateHome %q", d)
		}
		if d, _ := ConfigHome(); d != filepath.Join(home, ".config") {
			t.Errorf("ConfigHome %q", d)
		}
	}
}

func TestSignalNames(t *testing.T) {
	for sig, want := range map[Signal]string{SIGTERM: "SIGTERM", SIGKILL: "SIGKILL", SIGINT: "SIGINT", SIGHUP: "SIGHUP"} {
		if got := SignalName(sig); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", sig, got, want)
		}
	}
	if got := SignalName(Signal(200)); got != "SIG200" {
		t.Errorf("unknown signal: %q", got)
	}
}

// tempDir is t.TempDir, but removed file by file: under Wine 8 the
// runtime's RemoveAll fails on every file (Wine does not implement
// FileDispositionInformationEx, and answers with a status Go does not
// fall back on).
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "platform-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTree(d) })
	return d
}

func removeTree(d string) {
	entries, _ := os.ReadDir(d)
	for _, e := range entries {
		p := filepath.Join(d, e.Name())
		if e.IsDir() {
			removeTree(p)
		} else {
			_ = os.Remove(p)
		}
	}
	_ = os.Remove(d)
}
