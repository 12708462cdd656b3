package suite

import (
	"errors"
	"fmt"
	"io"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// Frame is one JSON-RPC message the client received (the shared test
// client's: Raw is the line as read).
type Frame = acptest.Frame

// Options start a Client.
type Options struct {
	Argv   []string  // the command: an agent, or acp-guard [flags] -- agent
	Env    []string  // its complete environment
	Dir    string    // its working directory
	Stderr io.Writer // a copy of its stderr (nil: none)
}

// Client is a small ACP client over the stdio of a child process: the
// shared test client (internal/acptest) reading in the background, plus
// the suite's ACP steps (session.go). It is safe for concurrent use.
// Agent→client requests are answered at once, as by a client without file
// system or terminal: session/request_permission by rejecting once (else
// cancelled), anything else (fs/*, terminal/*) with method-not-found.
type Client struct {
	*acptest.Client
}

// ErrExited is returned by WaitFor when the process exits first.
var ErrExited = acptest.ErrExited

// Start starts the command with piped stdin and stdout. The process gets
// its own process group, so Kill reaches grandchildren too.
func Start(o Options) (*Client, error) {
	if len(o.Argv) == 0 {
		return nil, errors.New("suite: empty command")
	}
	p, err := acptest.Spawn(o.Argv, acptest.Options{Env: o.Env, Dir: o.Dir, Stderr: o.Stderr})
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	return &Client{acptest.NewClient(p, acptest.Refusing)}, nil
}
