package acptest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/internal/testbin"
)

// DefaultWatchdog bounds how long one process may live in a test. It is a
// guard against hangs, not an assertion: when it fires the process group
// is killed, its stdout ends, and the test fails on the data it did not
// get — and on the watchdog, in the cleanup.
const DefaultWatchdog = 90 * time.Second

// Options start a process.
type Options struct {
	Env []string // its whole environment; nil: this process's
	Dir string   // its working directory; "": this process's
	// Stdin is written to the process's stdin before it starts: bytes
	// already waiting when it first reads.
	Stdin []byte
	// Watchdog kills the process group after this long (Start: default
	// DefaultWatchdog; Spawn: none unless set).
	Watchdog time.Duration
	// Answer, if set, answers the agent→client requests that Next,
	// Until and Rest read (Permissive answers as an editor that grants
	// what it is asked).
	Answer Answerer
	// Record keeps every stdout line read (Conn.Lines).
	Record bool
	// SkipInvalid makes Next, Until and Rest pass over stdout lines that
	// are not JSON (Record still keeps them) instead of failing the test.
	SkipInvalid bool
	// Stderr, if set, receives a copy of the process's stderr.
	Stderr io.Writer
}

// Proc is one running process seen from the client's side: its stdin, its
// stdout read line by line on the test's goroutine (nothing reads ahead:
// a test that stops reading applies backpressure), and its stderr collected
// in the background.
type Proc struct {
	*Conn
	Cmd    *exec.Cmd
	Stderr *testbin.Stream

	mu     sync.Mutex
	outF   *os.File
	done   chan struct{} // closed once the process has been waited for
	state  *os.ProcessState
	dog    *time.Timer
	bitten bool // the watchdog fired
}

// Spawn starts argv in its own process group with pipes on all three
// standard streams. The caller ends it (Kill) and waits for it (Exited).
func Spawn(argv []string, o Options) (*Proc, error) {
	if len(argv) == 0 {
		return nil, errors.New("acptest: empty command")
	}
	var files []*os.File
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		files = append(files, r, w)
		return r, w, err
	}
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, err
	}
	if len(o.Stdin) > 0 {
		if _, err := inW.Write(o.Stdin); err != nil { // a pipe holds 64 KiB
			closeAll()
			return nil, fmt.Errorf("acptest: writing stdin before the start: %w", err)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = o.Env, o.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	// Its own process group: signals a test sends stay with it, and the
	// cleanup ends whatever it started in the group.
	platform.OwnGroup(cmd)
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("acptest: starting %s: %w", argv[0], err)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	p := &Proc{
		Conn:   newConn(nil, inW, outR, o),
		Cmd:    cmd,
		Stderr: testbin.NewStream(),
		outF:   outR,
		done:   make(chan struct{}),
	}
	p.diag = func() string { return "; stderr:\n" + p.Stderr.Tail(4000) }
	// The stderr copier ends at EOF: when the process and everything it
	// started that held the pipe are gone.
	if o.Stderr != nil {
		go p.Stderr.Fill(teeCloser{io.TeeReader(errR, o.Stderr), errR})
	} else {
		go p.Stderr.Fill(errR)
	}
	// The waiter ends when the process does; done tells the others.
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		p.state = cmd.ProcessState
		p.mu.Unlock()
		close(p.done)
	}()
	if o.Watchdog > 0 {
		p.dog = time.AfterFunc(o.Watchdog, func() {
			p.mu.Lock()
			p.bitten = true
			p.mu.Unlock()
			p.killGroup()
		})
	}
	return p, nil
}

// Start is Spawn under a test: it fails t if the process cannot start,
// and t's cleanup ends the process, reports a watchdog that fired, and
// checks that the agent's process group (when acp-guard logged its pid:
// --log-level info) is gone.
func Start(t testing.TB, argv []string, o Options) *Proc {
	t.Helper()
	if o.Watchdog <= 0 {
		o.Watchdog = DefaultWatchdog
	}
	p, err := Spawn(argv, o)
	if err != nil {
		t.Fatal(err)
	}
	p.t = t
	t.Cleanup(p.cleanup)
	return p
}

func (p *Proc) killGroup() { _ = platform.KillGroup(p.Cmd.Process.Pid, platform.SIGKILL) }

// Kill closes stdin, kills the process group and waits for the process.
// It may be called more than once, and after the process exited.
func (p *Proc) Kill() {
	p.CloseStdin()
	if !p.Exited() {
		p.killGroup()
	}
	<-p.done
	if p.dog != nil {
		p.dog.Stop()
	}
}

func (p *Proc) cleanup() {
	p.Kill()
	p.outF.Close()
	p.mu.Lock()
	bitten := p.bitten
	p.mu.Unlock()
	if bitten {
		p.t.Errorf("%s still running after the watchdog; killed it. stderr:\n%s", p.Cmd.Path, p.Stderr.Tail(4000))
	}
	pgid, ok := p.agentPID()
	if !ok {
		return
	}
	if err := WaitGroupGone(pgid); err != nil {
		p.t.Errorf("agent process group %d: %v", pgid, err)
		_ = platform.KillGroup(pgid, platform.SIGKILL) // do not leak it into other tests
	}
}

// RawOut is stdout without Out's buffer, for a client that reads at its
// own pace down to the byte (backpressure); never read both.
func (p *Proc) RawOut() io.Reader { return p.outF }

// Hung reports whether the watchdog killed the process.
func (p *Proc) Hung() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bitten
}

// Pid is the process's pid (and process group id).
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) {
	if err := p.Cmd.Process.Signal(sig); err != nil && p.t != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
}

// Finish closes stdin, reads stdout to its end and waits for the exit: the
// remaining frames and the exit code.
func (p *Proc) Finish() ([]Frame, int) {
	p.t.Helper()
	p.CloseStdin()
	rest := p.Rest()
	return rest, p.Wait()
}

// Exited reports whether the process has exited (and was waited for).
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed once the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// ExitCode waits for the process and returns its exit code: 128+N when
// signal N killed it.
func (p *Proc) ExitCode() int {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if sig, ok := platform.ExitSignal(p.state); ok {
		return 128 + int(sig)
	}
	return p.state.ExitCode()
}

// Wait is ExitCode under the test: a process the watchdog had to kill
// fails it.
func (p *Proc) Wait() int {
	p.t.Helper()
	code := p.ExitCode()
	// The process is gone, but the goroutine copying its stderr may lag
	// behind: read it to the end before the caller looks at it. A
	// descendant still holding stderr open ends the wait at the watchdog
	// (a guard against a hang, not an assertion).
	eof := make(chan struct{})
	go func() { p.Stderr.WaitEOF(); close(eof) }()
	select {
	case <-eof:
	case <-time.After(DefaultWatchdog):
	}
	p.mu.Lock()
	bitten := p.bitten
	p.mu.Unlock()
	if bitten {
		p.t.Fatalf("%s hung; the watchdog killed it. stderr:\n%s", p.Cmd.Path, p.Stderr.Tail(4000))
	}
	return code
}

// WaitStderr waits until stderr holds s and returns all of it so far.
func (p *Proc) WaitStderr(s string) string {
	p.t.Helper()
	if !p.Stderr.WaitFor(s) {
		p.t.Fatalf("stderr ended without %q:\n%s", s, p.Stderr.Tail(4000))
	}
	return p.Stderr.String()
}

// AllStderr waits for stderr to end (the process and what it started are
// gone) and returns it.
func (p *Proc) AllStderr() string {
	p.Stderr.WaitEOF()
	return p.Stderr.String()
}

var agentStartedRe = regexp.MustCompile(`msg="agent started" pid=(\d+)`)

// agentPID returns the pid (and process group id) acp-guard logged for the
// agent, if it logged one.
func (p *Proc) agentPID() (int, bool) {
	m := agentStartedRe.FindStringSubmatch(p.Stderr.String())
	if m == nil {
		return 0, false
	}
	pid, err := strconv.Atoi(m[1])
	return pid, err == nil
}

// AgentPID waits until acp-guard has logged the agent's pid (it runs with
// --log-level info) and returns it.
func (p *Proc) AgentPID() int {
	p.t.Helper()
	p.WaitStderr(`msg="agent started"`)
	pid, ok := p.agentPID()
	if !ok {
		p.t.Fatalf("no agent pid in the log:\n%s", p.Stderr.Tail(2000))
	}
	return pid
}

// teeCloser is a reader that copies what it reads, closing the source.
type teeCloser struct {
	io.Reader
	io.Closer
}

// Run runs argv to its end with stdin as its input: its stdout, its stderr
// and its exit code.
func Run(t testing.TB, argv []string, o Options, stdin string) (stdout, stderr string, code int) {
	t.Helper()
	p := Start(t, argv, o)
	p.TrySend(stdin)
	p.CloseStdin()
	out := p.RestBytes()
	code = p.Wait()
	return string(out), p.AllStderr(), code
}
