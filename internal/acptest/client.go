package acptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// Client reads a process's stdout in the background, keeps every frame,
// answers the agent's requests, and lets callers wait for a frame with a
// context: a driver for long scenarios against real agents, which send
// requests of their own while the caller waits (the interop suite). It is
// safe for concurrent use. Tests that set the client's pace use Proc's own
// reading instead.
type Client struct {
	p      *Proc
	answer Answerer
	done   chan struct{} // closed when stdout has ended and the process exited

	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever frames grows
	frames  []Frame
	nextID  int
	closed  bool
}

// NewClient starts reading p's stdout; p must not be read otherwise from
// now on. Agent requests are answered with answer (nil: never).
func NewClient(p *Proc, answer Answerer) *Client {
	c := &Client{p: p, answer: answer, done: make(chan struct{}), changed: make(chan struct{})}
	// The reader: it ends at the end of stdout, after the process has
	// exited (the waiter's done), and then closes c.done.
	go c.read()
	return c
}

// Proc is the process the client reads.
func (c *Client) Proc() *Proc { return c.p }

// Pid returns the process id (also its process group id).
func (c *Client) Pid() int { return c.p.Pid() }

func (c *Client) read() {
	for {
		line, err := c.p.Out.ReadBytes('\n')
		if len(bytes.TrimRight(line, "\r\n")) > 0 {
			c.receive(line)
		}
		if err != nil {
			break
		}
	}
	<-c.p.done
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	close(c.done)
}

func (c *Client) receive(line []byte) {
	f, _ := Parse(line) // a line that is not JSON is kept, as Raw only
	c.mu.Lock()
	c.frames = append(c.frames, f)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	if c.answer != nil && f.IsRequest() {
		if reply, ok := c.answer(f); ok {
			_ = c.p.Write(reply)
		}
	}
}

func (c *Client) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.p.Write(string(b) + "\n")
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
	f, _, err := c.WaitFor(ctx, 0, func(f Frame) bool { return f.Answers(want) })
	if err != nil {
		return Frame{}, fmt.Errorf("waiting for the response to request %d: %w", id, err)
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
	from = min(from, len(c.frames))
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
func (c *Client) CloseStdin() { c.p.CloseStdin() }

// Wait waits for stdout to end and the process to exit, and returns its
// exit code (128+N when signal N killed it).
func (c *Client) Wait(ctx context.Context) (int, error) {
	select {
	case <-c.done:
		return c.p.ExitCode(), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Exited reports whether the process has exited and its stdout ended.
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
	c.p.Kill()
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
