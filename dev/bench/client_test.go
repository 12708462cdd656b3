package bench

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/demoagent"
)

// startInProcess runs the demo agent on pipes in this process and returns a
// client connected to it, handshake done.
func startInProcess(t *testing.T, opts demoagent.Options) *Client {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	done := make(chan error, 1)
	// The agent returns when toAgentW is closed (cleanup below), which the
	// cleanup waits for.
	go func() {
		err := demoagent.Run(context.Background(), opts, toAgentR, fromAgentW, io.Discard)
		fromAgentW.Close()
		done <- err
	}()
	t.Cleanup(func() {
		toAgentW.Close()
		go io.Copy(io.Discard, fromAgentR) // let a writing agent finish
		if err := <-done; err != nil {
			t.Errorf("demo agent: %v", err)
		}
	})
	c := NewClient(toAgentW, fromAgentR)
	if err := c.Handshake(); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return c
}

func TestClientCountsFramesAndBytes(t *testing.T) {
	for _, tt := range []struct {
		name        string
		count, size int
	}{
		{"small frames", 100, 200},
		{"frames longer than the read buffer", 3, clientBufSize + 1000},
		{"frames exactly the read buffer", 2, clientBufSize},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := startInProcess(t, demoagent.Options{Scenario: "stream", Count: tt.count, Size: tt.size})
			for i := range 2 {
				turn, err := c.Prompt()
				if err != nil {
					t.Fatalf("prompt %d: %v", i, err)
				}
				if got, want := turn.Frames, int64(tt.count+1); got != want {
					t.Errorf("prompt %d: got %d frames, want %d", i, got, want)
				}
				// count frames of size bytes, and a response line.
				minBytes, maxBytes := int64(tt.count*tt.size), int64(tt.count*tt.size+200)
				if turn.Bytes < minBytes || turn.Bytes > maxBytes {
					t.Errorf("prompt %d: got %d bytes, want %d..%d", i, turn.Bytes, minBytes, maxBytes)
				}
				if turn.Elapsed <= 0 {
					t.Errorf("prompt %d: got elapsed %v, want > 0", i, turn.Elapsed)
				}
			}
		})
	}
}

func TestClientAnswersAgentRequests(t *testing.T) {
	// "tools" asks the client for fs/read_text_file mid-turn; the client
	// answers and the turn ends.
	c := startInProcess(t, demoagent.Options{Scenario: "tools"})
	turn, err := c.Prompt()
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	// thought, tool_call, tool_call_update, request, tool_call_update,
	// message, response.
	if got, want := turn.Frames, int64(7); got != want {
		t.Errorf("got %d frames, want %d", got, want)
	}
}

func TestClientTimesPingPongHops(t *testing.T) {
	// Five requests, answered one by one: four hops between them. The
	// agent numbers its requests 1–5, so one shares the prompt's id (3,
	// after initialize and session/new) and must not end the turn.
	c := startInProcess(t, demoagent.Options{Scenario: "pingpong", Count: 5})
	turn, err := c.Prompt()
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	// five requests, the message, the response.
	if got, want := turn.Frames, int64(7); got != want {
		t.Errorf("got %d frames, want %d", got, want)
	}
	if len(turn.Hops) != 4 {
		t.Fatalf("got %d hops, want 4", len(turn.Hops))
	}
	for i, h := range turn.Hops {
		if h <= 0 || h > turn.Elapsed {
			t.Errorf("hop %d: %v, want within the turn's %v", i, h, turn.Elapsed)
		}
	}
	var r Result
	r.Workload = Workload{PingPong: true}
	r.Add(turn)
	if len(r.Latencies) != 4 {
		t.Errorf("a pingpong result keeps %d latencies, want the 4 hops", len(r.Latencies))
	}
}

func TestClientReportsErrorResponses(t *testing.T) {
	c := startInProcess(t, demoagent.Options{Scenario: "codex-error"})
	_, err := c.Prompt()
	if err == nil || !strings.Contains(err.Error(), "error response") {
		t.Fatalf("got %v, want an error response", err)
	}
}

func TestClientPromptBeforeHandshake(t *testing.T) {
	c := NewClient(io.Discard, strings.NewReader(""))
	if _, err := c.Prompt(); err == nil {
		t.Fatal("got nil error, want one")
	}
}

func TestClientUnexpectedEOF(t *testing.T) {
	for _, tt := range []struct {
		name, input string
	}{
		{"nothing", ""},
		{"partial line", `{"jsonrpc":"2.0","method":"session/update"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := NewClient(io.Discard, strings.NewReader(tt.input))
			if _, _, err := c.Call("x", []byte("{}")); err == nil {
				t.Fatal("got nil error, want one")
			}
		})
	}
}

func TestClientFindsResponseOutOfShape(t *testing.T) {
	// A response whose members are not in the demo agent's order is still
	// found (slow path), after a notification that is only counted.
	in := `{"jsonrpc":"2.0","method":"session/update","params":{}}` + "\n" +
		`{"result":{"stopReason":"end_turn"},"id":1,"jsonrpc":"2.0"}` + "\r\n"
	c := NewClient(io.Discard, strings.NewReader(in))
	turn, line, err := c.Call("session/prompt", []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := turn.Frames, int64(2); got != want {
		t.Errorf("got %d frames, want %d", got, want)
	}
	if got, want := turn.Bytes, int64(len(in)); got != want {
		t.Errorf("got %d bytes, want %d", got, want)
	}
	if !strings.HasPrefix(string(line), `{"result"`) || strings.HasSuffix(string(line), "\r") {
		t.Errorf("got line %q, want the response without terminator", line)
	}
}
