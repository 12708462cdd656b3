package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Binaries are the programs a session runs. Guard is the acp-guard binary;
// ByteCopy is dev/bench/cmd/bytecopy; Agent runs the demo agent (acp-guard
// demo-agent), Guard when empty. A separate Agent copy lets a profiler tell
// the relay from the agent by command name.
type Binaries struct {
	Guard    string
	ByteCopy string
	Agent    string
}

// Build compiles acp-guard and bytecopy into dir with the go command and
// the module of the current directory.
func Build(ctx context.Context, dir string) (Binaries, error) {
	b := Binaries{Guard: filepath.Join(dir, "acp-guard"), ByteCopy: filepath.Join(dir, "bytecopy")}
	for _, t := range []struct{ out, pkg string }{
		{b.Guard, "github.com/acp-guard/acp-guard/cmd/acp-guard"},
		{b.ByteCopy, "github.com/acp-guard/acp-guard/dev/bench/cmd/bytecopy"},
	} {
		// As `make build` builds acp-guard (static, no symbol tables);
		// bytecopy alike, so that the two differ only in their code.
		cmd := exec.CommandContext(ctx, goTool(), "build", "-trimpath", "-ldflags=-s -w", "-o", t.out, t.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return Binaries{}, fmt.Errorf("build %s: %w\n%s", t.pkg, err, out)
		}
	}
	return b, nil
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go" // not on PATH: let exec report it
}

// Argv returns the command line of mode m around the agent of workload w.
// extra are flags put before "--" in acp-guard's command line.
func (b Binaries) Argv(m Mode, w Workload, extra ...string) []string {
	bin := b.Agent
	if bin == "" {
		bin = b.Guard
	}
	agent := append([]string{bin}, w.AgentArgs()...)
	switch m {
	case ByteCopy:
		return append([]string{b.ByteCopy, "--"}, agent...)
	case Guard:
		argv := append([]string{b.Guard, "--log-level", "error"}, extra...)
		return append(append(argv, "--"), agent...)
	}
	return agent
}

// Session is one running configuration: the process the client talks to
// (the agent itself, or a relay with the agent as its child) and the client.
type Session struct {
	Mode   Mode
	Client *Client
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tailWriter
}

// Start starts argv (from Binaries.Argv) for mode m with pipes on its stdin
// and stdout, and performs the ACP handshake. env, if not nil, is added to
// the environment.
func Start(ctx context.Context, m Mode, argv []string, env []string) (*Session, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	stderr := &tailWriter{max: 4 << 10}
	cmd.Stderr = stderr
	// A relay killed on a failure path may leave the agent holding the
	// stderr pipe; do not wait for it for long.
	cmd.WaitDelay = 2 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", m, err)
	}
	s := &Session{Mode: m, Client: NewClient(stdin, stdout), cmd: cmd, stdin: stdin, stdout: stdout, stderr: stderr}
	if err := s.Client.Handshake(); err != nil {
		s.Kill()
		return nil, fmt.Errorf("%s: handshake: %w%s", m, err, s.stderrNote())
	}
	return s, nil
}

// PID is the process the client talks to: the relay, or the agent itself
// in Direct mode.
func (s *Session) PID() int { return s.cmd.Process.Pid }

// PeakRSS returns the high-water mark of the resident set (VmHWM) of the
// process the client talks to, in bytes. Call it before Close: after exit
// the figure is gone (and wait4's rusage would fold in the agent's).
func (s *Session) PeakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.PID()) + "/status")
	if err != nil {
		return 0, err
	}
	return parseVmHWM(b)
}

// CPUTime returns the CPU time the process the client talks to has used
// so far, all its threads, not its children: the scheduler's own
// accounting in nanoseconds (/proc/PID/task/*/schedstat, user and system
// alike), else utime+stime of /proc/PID/stat (10 ms ticks). A Go process
// keeps its threads, so no thread's time is lost between two readings.
func (s *Session) CPUTime() (time.Duration, error) {
	dir := "/proc/" + strconv.Itoa(s.PID())
	if d, err := schedstatCPU(dir); err == nil {
		return d, nil
	}
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// schedstatCPU sums the first field (time on the CPU, ns) of the
// schedstat of every thread of the process in dir.
func schedstatCPU(dir string) (time.Duration, error) {
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/task/" + t.Name() + "/schedstat")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // the thread ended since ReadDir
			}
			return 0, err
		}
		d, err := parseSchedstat(b)
		if err != nil {
			return 0, err
		}
		total += d
	}
	return total, nil
}

// parseSchedstat returns the first field of a schedstat line: nanoseconds
// spent on the CPU.
func parseSchedstat(b []byte) (time.Duration, error) {
	f := bytes.Fields(b)
	if len(f) < 1 {
		return 0, errors.New("schedstat: empty")
	}
	ns, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("schedstat: %w", err)
	}
	return time.Duration(ns), nil
}

// clockTick is USER_HZ, the unit of /proc/PID/stat times (100 on Linux).
const clockTick = 10 * time.Millisecond

// parseStatCPU returns utime+stime from a /proc/PID/stat line.
func parseStatCPU(stat []byte) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("stat: no command name")
	}
	f := bytes.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, errors.New("stat: too few fields")
	}
	var ticks int64
	for _, s := range f[11:13] { // fields 14 utime and 15 stime
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// parseVmHWM finds "VmHWM:  1234 kB" in a /proc/PID/status file.
func parseVmHWM(status []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("VmHWM: unexpected value %q", rest)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmHWM: %w", err)
		}
		return kb << 10, nil
	}
	return 0, errors.New("no VmHWM in status")
}

// Close closes the client's side of stdin, reads stdout to its end and
// waits for the process, which must exit with status 0 within timeout
// (else it is killed).
func (s *Session) Close(timeout time.Duration) error {
	s.stdin.Close()
	drained := make(chan error, 1)
	// The drainer exits at EOF on stdout, which comes when the process
	// (and every holder of the pipe) is gone; Kill below guarantees that.
	go func() {
		_, err := io.Copy(io.Discard, s.stdout)
		drained <- err
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-drained:
	case <-timer.C:
		s.Kill()
		<-drained
		return fmt.Errorf("%s: did not exit within %v after stdin closed%s", s.Mode, timeout, s.stderrNote())
	}
	if err := s.cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w%s", s.Mode, err, s.stderrNote())
	}
	return nil
}

// Kill ends the process at once and reaps it.
func (s *Session) Kill() {
	_ = s.cmd.Process.Kill()
	s.stdin.Close()
	_ = s.cmd.Wait()
}

func (s *Session) stderrNote() string {
	if t := s.stderr.String(); t != "" {
		return "; stderr: " + t
	}
	return ""
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(bytes.TrimSpace(w.buf))
}
