package demoagent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/syncio"
)

// testClient drives Run over pipes, as an editor would.
type testClient struct {
	t      *testing.T
	stdin  *io.PipeWriter
	lines  chan []byte // raw stdout lines, terminator included
	stderr *syncio.Buffer
	done   chan error // Run's result
	cancel context.CancelFunc
	nextID int
}

// msg is any frame the agent writes.
type msg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

func startAgent(t *testing.T, opts Options) *testClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	c := &testClient{
		t: t, stdin: inW, lines: make(chan []byte, 1024),
		stderr: &syncio.Buffer{}, done: make(chan error, 1), cancel: cancel,
	}
	// Run's goroutine: ends when Run returns; it then closes stdout so the
	// reader below ends too.
	go func() {
		err := Run(ctx, opts, inR, outW, c.stderr)
		outW.Close()
		inR.Close()
		c.done <- err
	}()
	// The stdout reader: ends at stdout EOF.
	go func() {
		defer close(c.lines)
		r := bufio.NewReaderSize(outR, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				c.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		for range c.lines { //nolint:revive // drain
		}
	})
	return c
}

// wait closes nothing; it returns Run's result.
func (c *testClient) wait() error { return <-c.done }

// closeStdin closes the agent's stdin and returns Run's result.
func (c *testClient) closeStdin() error {
	c.stdin.Close()
	return c.wait()
}

func (c *testClient) writeRaw(b []byte) {
	c.t.Helper()
	if _, err := c.stdin.Write(b); err != nil {
		c.t.Fatalf("writing to agent: %v", err)
	}
}

func (c *testClient) write(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.writeRaw(append(b, '\n'))
}

// request sends a request and returns its id.
func (c *testClient) request(method string, params any) json.RawMessage {
	c.t.Helper()
	c.nextID++
	id := json.RawMessage(fmt.Sprint(c.nextID))
	c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return id
}

func (c *testClient) notify(method string, params any) {
	c.t.Helper()
	c.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

func (c *testClient) respond(id json.RawMessage, result any) {
	c.t.Helper()
	c.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

// nextLine returns the next raw stdout line; it fails the test at EOF.
func (c *testClient) nextLine() []byte {
	c.t.Helper()
	line, ok := <-c.lines
	if !ok {
		c.t.Fatalf("agent stdout ended; stderr:\n%s", c.stderr.String())
	}
	return line
}

// next returns the next stdout frame, decoded.
func (c *testClient) next() msg {
	c.t.Helper()
	line := c.nextLine()
	var m msg
	if err := json.Unmarshal(line, &m); err != nil {
		c.t.Fatalf("agent wrote a line that is not JSON: %q", truncate(line))
	}
	return m
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// call sends a request and returns its response, failing on anything else
// in between.
func (c *testClient) call(method string, params any) msg {
	c.t.Helper()
	id := c.request(method, params)
	m := c.next()
	if string(m.ID) != string(id) || m.Method != "" {
		c.t.Fatalf("%s: got frame %+v, want the response to id %s", method, m, id)
	}
	return m
}

// session creates a session and returns its id.
func (c *testClient) session() string {
	c.t.Helper()
	m := c.call("session/new", map[string]any{"cwd": "/tmp", "mcpServers": []any{}})
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil || r.SessionID == "" {
		c.t.Fatalf("session/new: got %s (%v), want a sessionId", m.Result, err)
	}
	return r.SessionID
}

func (c *testClient) prompt(sessionID string) json.RawMessage {
	c.t.Helper()
	return c.request("session/prompt", map[string]any{
		"sessionId": sessionID,
		"prompt":    []any{map[string]any{"type": "text", "text": "hello"}},
	})
}

// summarize renders a frame as one short line for comparisons:
// "message: TEXT", "thought: TEXT", "tool_call call-1 pending",
// "tool_call_update call-1 completed", "request METHOD", "result end_turn",
// "error CODE MESSAGE", "raw LINE".
func summarize(line []byte) string {
	var m msg
	if json.Unmarshal(line, &m) != nil {
		return "raw " + strings.TrimRight(string(line), "\n")
	}
	switch {
	case m.Method == "session/update":
		var p struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
				Content       struct {
					Text string `json:"text"`
				} `json:"content"`
				ToolCallID string `json:"toolCallId"`
				Title      string `json:"title"`
				Status     string `json:"status"`
			} `json:"update"`
		}
		_ = json.Unmarshal(m.Params, &p)
		u := p.Update
		switch u.SessionUpdate {
		case "agent_message_chunk":
			return "message: " + u.Content.Text
		case "agent_thought_chunk":
			return "thought: " + u.Content.Text
		case "tool_call":
			return fmt.Sprintf("tool_call %s %q %s", u.ToolCallID, u.Title, u.Status)
		default:
			return fmt.Sprintf("%s %s %s", u.SessionUpdate, u.ToolCallID, u.Status)
		}
	case m.Method != "" && m.ID != nil:
		return "request " + m.Method
	case m.Method != "":
		return "notification " + m.Method
	case m.Error != nil:
		return fmt.Sprintf("error %d %s", m.Error.Code, m.Error.Message)
	default:
		var r struct {
			StopReason string `json:"stopReason"`
		}
		_ = json.Unmarshal(m.Result, &r)
		return "result " + r.StopReason
	}
}

// turn collects the summaries of the frames up to and including the
// response to id.
func (c *testClient) turn(id json.RawMessage) []string {
	c.t.Helper()
	var got []string
	for {
		line := c.nextLine()
		got = append(got, summarize(line))
		var m msg
		if json.Unmarshal(line, &m) == nil && m.Method == "" && string(m.ID) == string(id) {
			return got
		}
	}
}
