package suite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	acp "github.com/coder/acp-go-sdk"
)

// Frame is one JSON-RPC message the client received, kept verbatim in Raw
// (without the trailing newline) beside the fields the suite reads.
type Frame struct {
	Raw    []byte
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  json.RawMessage
}

// IsResponse reports whether the frame answers a request (it has an id and
// no method).
func (f Frame) IsResponse() bool { return f.Method == "" && len(f.ID) > 0 }

// HasError reports whether the frame is an error response.
func (f Frame) HasError() bool { return len(f.Error) > 0 && string(f.Error) != "null" }

// Options start a Client.
type Options struct {
	Argv   []string  // the command: an agent, or acp-guard [flags] -- agent
	Env    []string  // its complete environment
	Dir    string    // its working directory
	Stderr io.Writer // its stderr (nil: discarded)
}

// Client is a small ACP client over the stdio of a child process. It is
// safe for concurrent use. Agent→client requests are answered at once:
// session/request_permission by rejecting once (else cancelled), anything
// else (fs/*, terminal/*) with method-not-found — the client advertises
// neither capability.
type Client struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when the process has exited and stdout is drained

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever frames grows
	frames   []Frame
	nextID   int
	closed   bool
	exitErr  error
	exitCode int
}

// Start starts the command with piped stdin and stdout. The process gets
// its own process group, so Kill reaches grandchildren too.
func Start(o Options) (*Client, error) {
	if len(o.Argv) == 0 {
		return nil, errors.New("suite: empty command")
	}
	cmd := exec.Command(o.Argv[0], o.Argv[1:]...)
	cmd.Env, cmd.Dir = o.Env, o.Dir
	cmd.Stderr = o.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("suite: start %s: %w", o.Argv[0], err)
	}
	c := &Client{cmd: cmd, stdin: stdin, done: make(chan struct{}), changed: make(chan struct{})}
	go c.read(stdout)
	return c, nil
}

// Pid returns the process id (also its process group id).
func (c *Client) Pid() int { return c.cmd.Process.Pid }

func (c *Client) read(stdout io.Reader) {
	r := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if line = bytes.TrimRight(line, "\r\n"); len(line) > 0 {
			c.receive(line)
		}
		if err != nil {
			break
		}
	}
	werr := c.cmd.Wait()
	c.mu.Lock()
	c.exitErr = werr
	c.exitCode = c.cmd.ProcessState.ExitCode()
	c.closed = true
	c.mu.Unlock()
	close(c.done)
}

func (c *Client) receive(line []byte) {
	f := Frame{Raw: append([]byte(nil), line...)}
	var w struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(line, &w) == nil {
		f.ID, f.Method, f.Params, f.Result, f.Error = w.ID, w.Method, w.Params, w.Result, w.Error
	}
	c.mu.Lock()
	c.frames = append(c.frames, f)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	if f.Method != "" && len(f.ID) > 0 {
		c.answer(f)
	}
}

// answer replies to an agent→client request.
func (c *Client) answer(f Frame) {
	if f.Method == acp.ClientMethodSessionRequestPermission {
		var p struct {
			Options []struct {
				OptionID string `json:"optionId"`
				Kind     string `json:"kind"`
			} `json:"options"`
		}
		_ = json.Unmarshal(f.Params, &p)
		outcome := map[string]any{"outcome": "cancelled"}
		for _, o := range p.Options {
			if o.Kind == "reject_once" {
				outcome = map[string]any{"outcome": "selected", "optionId": o.OptionID}
				break
			}
		}
		_ = c.write(map[string]any{"jsonrpc": "2.0", "id": f.ID, "result": map[string]any{"outcome": outcome}})
		return
	}
	_ = c.write(map[string]any{"jsonrpc": "2.0", "id": f.ID,
		"error": map[string]any{"code": -32601, "message": "Method not found: " + f.Method}})
}

func (c *Client) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stdin == nil {
		return errors.New("suite: stdin closed")
	}
	_, err = c.stdin.Write(append(b, '\n'))
	return err
}

// Send sends a request and returns its id (an integer, counting from 0).
func (c *Client) Send(method string, params any) (int, error) {
	c.mu.Lock()
	id := c.nextID
	c.nextID++
	c.mu.Unlock()
	return id, c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) error {
	return c.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// Call sends a request and waits for its response.
func (c *Client) Call(ctx context.Context, method string, params any) (Frame, error) {
	id, err := c.Send(method, params)
	if err != nil {
		return Frame{}, err
	}
	return c.Response(ctx, id)
}

// Response waits for the response to request id.
func (c *Client) Response(ctx context.Context, id int) (Frame, error) {
	want := strconv.Itoa(id)
	f, _, err := c.WaitFor(ctx, 0, func(f Frame) bool { return f.IsResponse() && string(f.ID) == want })
	if err != nil {
		return Frame{}, fmt.Errorf("suite: waiting for the response to request %d: %w", id, err)
	}
	return f, nil
}

// Mark returns the number of frames received so far; frames from a mark on
// are those received after it.
func (c *Client) Mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.frames)
}

// Frames returns a copy of the frames received from index from on.
func (c *Client) Frames(from int) []Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	if from > len(c.frames) {
		from = len(c.frames)
	}
	return append([]Frame(nil), c.frames[from:]...)
}

// ErrExited is returned by WaitFor when the process exits first.
var ErrExited = errors.New("process exited")

// WaitFor waits until a frame at index from or later matches and returns
// it with its index. It returns ErrExited when the process ends first, or
// the context's error.
func (c *Client) WaitFor(ctx context.Context, from int, match func(Frame) bool) (Frame, int, error) {
	for i := from; ; {
		c.mu.Lock()
		for ; i < len(c.frames); i++ {
			if match(c.frames[i]) {
				f := c.frames[i]
				c.mu.Unlock()
				return f, i, nil
			}
		}
		changed, closed := c.changed, c.closed
		c.mu.Unlock()
		if closed {
			return Frame{}, -1, ErrExited
		}
		select {
		case <-changed:
		case <-c.done:
		case <-ctx.Done():
			return Frame{}, -1, ctx.Err()
		}
	}
}

// CloseStdin closes the process's stdin: the client disconnects.
func (c *Client) CloseStdin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stdin != nil {
		_ = c.stdin.Close()
		c.stdin = nil
	}
}

// Wait waits for the process to exit and returns its exit code (-1 when
// killed by a signal).
func (c *Client) Wait(ctx context.Context) (int, error) {
	select {
	case <-c.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.exitCode, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Exited reports whether the process has exited.
func (c *Client) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Kill closes stdin and kills the process group; it is safe to call more
// than once and after the process has exited.
func (c *Client) Kill() {
	c.CloseStdin()
	if !c.Exited() {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-c.done
}

// Stop closes stdin and waits for the process to exit; if it is still
// running when ctx ends, the process group is killed. It reports whether
// the process exited by itself.
func (c *Client) Stop(ctx context.Context) bool {
	c.CloseStdin()
	if _, err := c.Wait(ctx); err == nil {
		return true
	}
	c.Kill()
	return false
}
