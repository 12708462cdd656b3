//go:build unix

package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/internal/testbin"
)

// stopsigReady is the runtime's initialization trace line (GODEBUG=
// inittrace=1) of the package that subscribes to the stop signals: from
// there on no stop signal is lost. Before it, only the Go runtime and the
// packages os/signal needs run (well under a millisecond on an idle
// machine); a signal then ends the process as it would any Go program.
const stopsigReady = "init github.com/acp-guard/acp-guard/cmd/acp-guard/internal/stopsig @"

// earlyRun is one acp-guard run stopped by sig delay after its stop
// signals were caught, with initialize already sent.
type earlyRun struct {
	delay   time.Duration
	answers int    // responses to id 1 on stdout
	code    int    // exit code; -1 when a signal ended the process
	killed  string // the signal that ended the process, if one did
	out     string
	stderr  string
}

// runEarlySignal starts argv (acp-guard … -- demo agent) with the runtime's
// initialization trace on, writes initialize, waits until the stop
// signals are caught, waits delay, sends sig, and reads stdout to its end
// with stdin left open (an EOF would end the session by itself).
func runEarlySignal(t *testing.T, argv []string, sig platform.Signal, delay time.Duration) earlyRun {
	t.Helper()
	p := acptest.Start(t, argv, acptest.Options{Env: append(os.Environ(), "GODEBUG=inittrace=1", "XDG_STATE_HOME="+t.TempDir())})
	p.Send(acptest.Initialize(1))
	if !p.Stderr.WaitFor(stopsigReady) {
		t.Fatalf("no %q in stderr:\n%s", stopsigReady, p.Stderr.Tail(2000))
	}
	time.Sleep(delay) // the random point: part of the scenario, not a margin
	_ = p.Cmd.Process.Signal(sig)
	b := p.RestBytes()
	p.Stderr.WaitEOF()
	<-p.Done()
	r := earlyRun{delay: delay, code: p.Cmd.ProcessState.ExitCode(), out: string(b), stderr: p.Stderr.Tail(3000)}
	if sig, ok := platform.ExitSignal(p.Cmd.ProcessState); ok {
		r.killed = sig.String()
	}
	for _, ln := range strings.SplitAfter(r.out, "\n") {
		if f, err := acptest.Parse([]byte(ln)); err == nil && f.Answers("1") {
			r.answers++
		}
	}
	return r
}

// busy keeps n CPUs busy until stop is closed (the runs below happen
// under load); the test waits for the loops on the WaitGroup.
func busy(n int, stop chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range 100000 {
					x ^= i
				}
			}
		}()
	}
	return &wg
}

// TestE2EEarlySignalAnswersInitialize: SIGTERM at random points of the
// first 200 ms after acp-guard caught its stop signals — during flag
// parsing, configuration, catalogue load, the agent's start, or after —
// on a loaded machine: every run answers the initialize the client had
// already sent exactly once and exits 128+15. Before the signals were
// caught first thing, a TERM in that window killed the proxy without an
// answer. Each run's delay comes from the seed the failure names.
func TestE2EEarlySignalAnswersInitialize(t *testing.T) {
	runs := 24
	if testing.Short() {
		runs = 8
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 25))
	stop := make(chan struct{})
	loops := busy(runtime.NumCPU(), stop)
	defer func() { close(stop); loops.Wait() }()
	results := make([]earlyRun, runs)
	var wg sync.WaitGroup
	for i := range results {
		u := rng.Float64()
		delay := time.Duration(u * u * u * float64(200*time.Millisecond)) // most runs early
		wg.Add(1)
		go func() { // waited for below
			defer wg.Done()
			results[i] = runEarlySignal(t, append([]string{testbin.Path(t)}, proxy(t, nil, "--scenario", "success")...), platform.SIGTERM, delay)
		}()
	}
	wg.Wait()
	bad := 0
	for i, r := range results {
		if r.answers != 1 || r.code != 128+int(platform.SIGTERM) {
			bad++
			t.Errorf("run %d (seed %d, TERM %v after the signals were caught): %d answers to initialize, exit %d %s; want 1 and 143\nstdout: %s\nstderr: %s",
				i, seed, r.delay, r.answers, r.code, r.killed, r.out, r.stderr)
		}
	}
	t.Logf("%d of %d runs stopped by an early SIGTERM answered initialize once and exited 143", runs-bad, runs)
}

// TestE2EEarlyHangupUnderNohup: started with SIGHUP ignored (nohup), a
// SIGHUP before or after the agent started is still a stop request for
// the proxy: initialize is answered once and acp-guard exits 128+1.
func TestE2EEarlyHangupUnderNohup(t *testing.T) {
	bin := testbin.Path(t)
	for _, delay := range []time.Duration{0, 5 * time.Millisecond, 50 * time.Millisecond, 300 * time.Millisecond} {
		t.Run(fmt.Sprint(delay), func(t *testing.T) {
			argv := append([]string{"sh", "-c", `trap '' HUP; exec "$@"`, "sh", bin}, proxy(t, nil, "--scenario", "success")...)
			r := runEarlySignal(t, argv, platform.SIGHUP, delay)
			if r.answers != 1 || r.code != 128+int(platform.SIGHUP) {
				t.Errorf("SIGHUP %v after the signals were caught: %d answers, exit %d %s; want 1 and 129\nstdout: %s\nstderr: %s",
					delay, r.answers, r.code, r.killed, r.out, r.stderr)
			}
		})
	}
}

// TestE2ESignalBeforeAgentNotStarted: a stop signal that arrives before
// the agent is started (here while the policy is read from a FIFO that is
// not written until the signal was sent) means the agent is never
// started; the error names the signal.
func TestE2ESignalBeforeAgentNotStarted(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "policy.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	marker := filepath.Join(dir, "agent-ran")
	p := startBin(t, nil, "--log-level", "info", "--policy", fifo, "--", "sh", "-c", "touch "+marker+"; exec cat")
	p.TrySend(acptest.Initialize(1))
	src := []byte(`{"version":1}`)
	// A non-blocking open for writing succeeds once acp-guard has the FIFO
	// open for reading: it is then loading its configuration (after the
	// flags, before the agent), blocked until the policy is written.
	var w *os.File
	var err error
	if err := waitUntil(func() bool {
		w, err = os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		return err == nil
	}); err != nil {
		t.Fatalf("acp-guard never opened the policy: %v; stderr:\n%s", err, p.Stderr.Tail(2000))
	}
	_ = p.Cmd.Process.Signal(platform.SIGTERM)
	// The signal is sent, not yet seen: the kernel delivers it to a thread,
	// and the Go runtime hands it on to stopsig's watcher through two
	// goroutines. Written at once, the policy could let acp-guard read it
	// and start the agent before the watcher ran (seen beside busy loops:
	// "the agent exited before answering (killed by signal SIGTERM)").
	// While acp-guard waits on the FIFO, nothing but that path can run:
	// once the signal is no longer pending and every thread sleeps, the
	// watcher has it.
	if err := waitUntil(func() bool { return signalTaken(p.Cmd.Process.Pid, platform.SIGTERM) }); err != nil {
		t.Fatalf("acp-guard never took the signal: %v", err)
	}
	if err := setBlocking(w); err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(src)
	w.Close()
	out := p.RestBytes()
	if code := p.Wait(); code != 143 {
		t.Errorf("exit code %d, want 143; stderr:\n%s", code, p.Stderr.Tail(2000))
	}
	if n := bytes.Count(out, []byte(`"id":1`)); n != 1 || !bytes.Contains(out, []byte("stopped by SIGTERM before the agent started")) {
		t.Errorf("stdout %s; want one error to initialize naming the signal", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the agent was started after the stop signal")
	}
}

// signalTaken reports whether process pid has taken sig from the kernel
// (it is pending neither for the process nor for any of its threads) and
// has gone quiet (no thread running or runnable).
func signalTaken(pid int, sig platform.Signal) bool {
	bit := uint64(1) << (sig - 1)
	pending := func(path string, fields ...string) bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return true // cannot tell: keep waiting
		}
		for _, line := range strings.Split(string(b), "\n") {
			for _, f := range fields {
				if v, ok := strings.CutPrefix(line, f+":"); ok {
					var mask uint64
					if _, err := fmt.Sscanf(strings.TrimSpace(v), "%x", &mask); err != nil || mask&bit != 0 {
						return true
					}
				}
			}
		}
		return false
	}
	if pending(fmt.Sprintf("/proc/%d/status", pid), "ShdPnd", "SigPnd") {
		return false
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false
	}
	for _, task := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s", pid, task.Name())
		if pending(dir+"/status", "SigPnd") {
			return false
		}
		st, err := os.ReadFile(dir + "/stat")
		i := bytes.LastIndexByte(st, ')')
		if err != nil || i < 0 || i+2 >= len(st) || st[i+2] == 'R' {
			return false
		}
	}
	return true
}

// waitUntil polls cond until it holds (a guard deadline, not an
// assertion: it only ends a hang).
func waitUntil(cond func() bool) error {
	deadline := time.Now().Add(acptest.DefaultWatchdog)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not reached")
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}

func setBlocking(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}
