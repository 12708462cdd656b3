package transport

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// StartError is returned when the agent cannot be started. ExitCode is
// 127 when it was not found and 126 when it cannot be executed.
type StartError struct {
	Argv0    string
	ExitCode int
	Err      error
}

func (e *StartError) Error() string {
	what := "cannot execute"
	if e.ExitCode == 127 {
		what = "not found"
	}
	return fmt.Sprintf("agent %q %s: %v", e.Argv0, what, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// child is the agent process and the parent's ends of its pipes: one Run
// started (cmd), or one the caller runs (ext, AgentPipes).
type child struct {
	cmd    *exec.Cmd
	ext    *AgentPipes
	stdin  io.WriteCloser  // we write
	stdout io.ReadCloser   // we read
	stderr io.ReadCloser   // we read (a pty master with StderrPTY)
	pgid   int             // 0 for the caller's agent
	grp    *platform.Group // nil for the caller's agent
	// gone is closed when the caller's agent has exited (its Wait
	// returned, or its stdout ended when it has no Wait).
	gone chan struct{}
}

func startChild(argv []string, env []string, dir string, stderrPTY bool) (*child, error) {
	if len(argv) == 0 {
		return nil, &StartError{ExitCode: 127, Err: errors.New("no agent command given")}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		code := 127
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, platform.EISDIR) {
			code = 126 // as a shell says for a file it cannot execute or a directory
		}
		return nil, &StartError{Argv0: argv[0], ExitCode: code, Err: err}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("agent stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("agent stdout pipe: %w", err)
	}
	var errR, errW *os.File
	if stderrPTY {
		errR, errW, err = platform.OpenPTY()
	} else {
		errR, errW, err = os.Pipe()
	}
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("agent stderr: %w", err)
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	// Its own process group, so signals and the final kill reach the whole
	// agent; and if acp-guard itself is killed outright (nothing of ours
	// runs), the agent dies too: how is the platform layer's (Linux: the
	// parent-death signal SIGKILL; macOS: a watchdog; Windows: a job
	// object).
	platform.Prepare(cmd)
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		code := 126
		if errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		return nil, &StartError{Argv0: argv[0], ExitCode: code, Err: err}
	}
	// The child has its copies; close ours so EOF propagates.
	closeAll(inR, outW, errW)
	grp, err := platform.Attach(cmd)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		closeAll(inW, outR, errR)
		return nil, &StartError{Argv0: argv[0], ExitCode: 126, Err: err}
	}
	return &child{cmd: cmd, stdin: inW, stdout: outR, stderr: errR, pgid: cmd.Process.Pid, grp: grp}, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// signalGroup sends sig to the agent's whole process group (the caller's
// agent: through AgentPipes.Signal, when set).
func (c *child) signalGroup(sig platform.Signal) error {
	if c.ext != nil {
		if c.ext.Signal == nil {
			return nil
		}
		return c.ext.Signal(sig)
	}
	return c.grp.Signal(sig)
}

// release kills whatever is left of the agent's process group and lets go
// of what keeps it tied to acp-guard (the caller's agent is the caller's).
func (c *child) release() {
	if c.grp != nil {
		c.grp.Close()
	}
}

// wait waits for the agent and converts its state to an ExitStatus.
func (c *child) wait() ExitStatus {
	if c.ext != nil {
		st := ExitStatus{}
		if c.ext.Wait != nil {
			st = c.ext.Wait()
		} else {
			<-c.stdoutEOF()
		}
		close(c.gone)
		return st
	}
	err := c.cmd.Wait()
	ps := c.cmd.ProcessState
	if ps == nil {
		return ExitStatus{Code: 1, StartErr: err}
	}
	if sig, ok := platform.ExitSignal(ps); ok {
		return ExitStatus{Code: 128 + int(sig), Signal: SignalName(sig)}
	}
	return ExitStatus{Code: ps.ExitCode()}
}
