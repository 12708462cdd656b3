package transport

import (
	"errors"
	"io"
	"os"
	"strings"
	"sync"
)

// AgentPipes are the ends of an agent the caller runs itself (an
// orchestrator that already started it, an agent in the same process):
// Run relays between the client and these instead of starting
// Options.Argv. Run takes them over: it writes the client's frames to
// Stdin and closes it when the client's input ends (or the session does),
// reads Stdout and Stderr to their end, and closes those that are
// io.Closers once the session is over.
type AgentPipes struct {
	Stdin  io.WriteCloser // the agent's input
	Stdout io.Reader      // the agent's output: ACP frames
	Stderr io.Reader      // optional: the agent's diagnostics (evidence for the classifier)
	// Wait, if set, blocks until the agent has exited and says how. Nil:
	// the agent counts as exited, with code 0, when Stdout ends.
	Wait func() ExitStatus
	// Signal, if set, delivers a signal to the agent: the one forwarded
	// when Run is told to stop (Options.Signals, the context ending) and
	// the grace escalation (SIGTERM, then SIGKILL) go through it. Nil:
	// nothing is delivered, and the session ends when the agent exits on
	// its own (after its input closes, or when Wait returns).
	Signal func(os.Signal) error
	// Name names the agent in logs (its command, say); optional.
	Name string
}

// errNoPipes is returned by Run for AgentPipes without Stdin or Stdout.
var errNoPipes = errors.New("transport: AgentPipes needs Stdin and Stdout")

// pipesChild wraps the caller's agent as Run's child.
func pipesChild(p *AgentPipes) (*child, error) {
	if p.Stdin == nil || p.Stdout == nil {
		return nil, errNoPipes
	}
	c := &child{ext: p, stdin: p.Stdin, gone: make(chan struct{})}
	c.stdout = &eofReader{rc: closerOf(p.Stdout), eof: make(chan struct{})}
	if p.Stderr != nil {
		c.stderr = closerOf(p.Stderr)
	} else {
		c.stderr = io.NopCloser(strings.NewReader(""))
	}
	return c, nil
}

// startAgent starts Options.Argv, or adopts Options.Agent.
func startAgent(o Options) (*child, error) {
	if o.Agent != nil {
		return pipesChild(o.Agent)
	}
	return startChild(o.Argv, o.Env, o.Dir, o.StderrPTY)
}

// agentName names the agent in logs.
func agentName(o Options) string {
	switch {
	case o.Agent != nil && o.Agent.Name != "":
		return o.Agent.Name
	case o.Agent != nil:
		return "(the caller's agent)"
	case len(o.Argv) > 0:
		return o.Argv[0]
	}
	return ""
}

// exited reports whether the agent has exited: a process Run started is a
// zombie or gone; the caller's agent's Wait returned (or, without Wait,
// its stdout ended).
func (c *child) exited() bool {
	if c.ext == nil {
		return processExited(c.pgid)
	}
	select {
	case <-c.gone:
		return true
	default:
		return false
	}
}

// stdoutEOF is closed when the caller's agent's stdout has ended.
func (c *child) stdoutEOF() <-chan struct{} { return c.stdout.(*eofReader).eof }

// eofReader closes eof at the first error its one reader sees.
type eofReader struct {
	rc   io.ReadCloser
	eof  chan struct{}
	once sync.Once
}

func (r *eofReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if err != nil {
		r.once.Do(func() { close(r.eof) })
	}
	return n, err
}

func (r *eofReader) Close() error { return r.rc.Close() }

// closerOf returns r as an io.ReadCloser (closing nothing when r has no
// Close).
func closerOf(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}
