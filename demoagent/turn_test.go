package demoagent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestStream(t *testing.T) {
	for _, tt := range []struct {
		count, size, wantSize int
	}{
		{0, 0, 0}, // defaults: 20000 frames, the smallest frame (64 B is below it)
		{200, 64 << 10, 64 << 10},
		{10, 500, 500},
	} {
		t.Run(fmt.Sprintf("%dx%d", tt.count, tt.size), func(t *testing.T) {
			c := startAgent(t, Options{Scenario: "stream", Count: tt.count, Size: tt.size})
			sid := c.session()
			wantCount := tt.count
			if wantCount == 0 {
				wantCount = DefaultStreamCount
			}
			wantSize := tt.wantSize
			if wantSize == 0 {
				wantSize = len(textLine(sid, updateMessageChunk, "t"))
			}
			id := c.prompt(sid)
			prefix := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + sid + `","update":{"sessionUpdate":"agent_message_chunk"`)
			for i := range wantCount {
				line := c.nextLine()
				if len(line) != wantSize || !bytes.HasPrefix(line, prefix) || (i == 0 && !json.Valid(line)) {
					t.Fatalf("frame %d: got %d bytes %q, want a %d-byte message chunk", i, len(line), truncate(line), wantSize)
				}
			}
			if got := c.turn(id); !slices.Equal(got, []string{"result end_turn"}) {
				t.Errorf("end of stream: got %q, want end_turn", got)
			}
		})
	}
}

func TestHugeLine(t *testing.T) {
	c := startAgent(t, Options{Scenario: "huge-line"})
	id := c.prompt(c.session())
	line := c.nextLine()
	if len(line) != DefaultHugeSize || !json.Valid(line) {
		t.Errorf("huge line: got %d bytes (valid JSON %v), want %d", len(line), json.Valid(line), DefaultHugeSize)
	}
	if got := c.turn(id); !slices.Equal(got, []string{"result end_turn"}) {
		t.Errorf("after the huge line: got %q, want end_turn", got)
	}
}

func TestCancel(t *testing.T) {
	for _, tt := range []struct {
		name  string
		opts  Options
		until string // summary prefix of the frame to wait for before cancelling
	}{
		{"hang", Options{Scenario: "hang"}, ""},
		{"success with delay", Options{Scenario: "success", Delay: time.Hour}, "thought: "},
		{"stream with delay", Options{Scenario: "stream", Delay: time.Hour}, "message: "},
		{"tools awaiting the client", Options{Scenario: "tools"}, "request fs/read_text_file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := startAgent(t, tt.opts)
			sid := c.session()
			other := c.session()
			id := c.prompt(sid)
			// Wait for a frame when the script writes one, so the cancel
			// lands mid-turn.
			for tt.until != "" && !strings.HasPrefix(summarize(c.nextLine()), tt.until) {
			}
			c.notify("session/cancel", map[string]any{"sessionId": other}) // not this turn
			c.notify("session/cancel", map[string]any{"sessionId": sid})
			if got := c.turn(id); !slices.Equal(got, []string{"result cancelled"}) {
				t.Errorf("after cancel: got %q, want only the cancelled result", got)
			}
			// The agent still works after a cancelled turn.
			c.call("authenticate", map[string]any{})
		})
	}
}

func TestHangIgnoreCancelStaysAfterEOF(t *testing.T) {
	c := startAgent(t, Options{Scenario: "hang", IgnoreCancel: true})
	sid := c.session()
	id := c.prompt(sid)
	c.notify("session/cancel", map[string]any{"sessionId": sid})
	// The response to this request comes first: the prompt is not answered.
	c.call("authenticate", map[string]any{})
	c.stdin.Close()
	select {
	case err := <-c.done:
		t.Fatalf("Run returned %v after EOF, want it to stay until cancelled", err)
	default:
	}
	c.cancel()
	if err := c.wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("Run: got %v, want context.Canceled", err)
	}
	for line := range c.lines {
		var m msg
		if json.Unmarshal(line, &m) == nil && string(m.ID) == string(id) {
			t.Errorf("got an answer to the hung prompt: %s", line)
		}
	}
}

func TestEOFFinishesTurnsInFlight(t *testing.T) {
	c := startAgent(t, Options{})
	id := c.prompt(c.session())
	c.stdin.Close()
	if got := c.turn(id); !slices.Equal(got, success) {
		t.Errorf("turn after EOF: got %q, want %q", got, success)
	}
	if err := c.wait(); err != nil {
		t.Errorf("Run: got %v, want nil", err)
	}
}

func TestEOFEndsTurnsAwaitingTheClient(t *testing.T) {
	c := startAgent(t, Options{Scenario: "tools"})
	c.prompt(c.session())
	for !strings.HasPrefix(summarize(c.nextLine()), "request ") {
	}
	if err := c.closeStdin(); err != nil {
		t.Errorf("Run: got %v, want nil", err)
	}
}

func TestFailThenSucceed(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts Options
		fail []string // what each failing turn looks like
	}{
		{"default", Options{Scenario: "fail-then-succeed"}, []string{"error -32603 Internal error"}},
		{"cursor", Options{Scenario: "fail-then-succeed", AgentName: "cursor-agent", Fail: 3},
			[]string{"message: Error: RetriableError: [unavailable] PING timed out", "result end_turn"}},
		{"claude overloaded", Options{Scenario: "fail-then-succeed", AgentName: "@zed-industries/claude-agent-acp", Fail: 1},
			[]string{`error -32603 Internal error: API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_demo_529"}`}},
		{"auth kind", Options{Scenario: "fail-then-succeed", Error: KindAuth}, []string{"error -32000 Authentication required"}},
		{"no failures", Options{Scenario: "fail-then-succeed", Fail: -1}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := startAgent(t, tt.opts)
			fails := max(tt.opts.Fail, 0)
			if tt.opts.Fail == 0 {
				fails = DefaultFail
			}
			// Prompts are counted per process, across sessions.
			for n := 1; n <= fails+2; n++ {
				want := success
				if n <= fails {
					want = tt.fail
				}
				id := c.prompt(c.session())
				if got := c.turn(id); !slices.Equal(got, want) {
					t.Errorf("prompt %d: got %q, want %q", n, got, want)
				}
			}
		})
	}
}

func TestFailModel(t *testing.T) {
	c := startAgent(t, Options{Scenario: "fail-model", AgentName: "codex-acp"})
	sid := c.session()
	for _, tt := range []struct {
		model string
		want  []string
	}{
		{"model-a", []string{"error -32603 Internal error"}},
		{"model-b", []string{"message: Answer from model-b.", "result end_turn"}},
		{"model-a", []string{"error -32603 Internal error"}},
		{"model-c", []string{"message: Answer from model-c.", "result end_turn"}},
	} {
		c.call("session/set_model", map[string]any{"sessionId": sid, "modelId": tt.model})
		if got := c.turn(c.prompt(sid)); !slices.Equal(got, tt.want) {
			t.Errorf("on %s: got %q, want %q", tt.model, got, tt.want)
		}
	}
}

func TestTools(t *testing.T) {
	for _, tt := range []struct {
		name  string
		reply func(c *testClient, id json.RawMessage)
		want  []string
	}{
		{"read ok", func(c *testClient, id json.RawMessage) { c.respond(id, map[string]any{"content": "hello"}) }, []string{
			"tool_call_update call-1 completed", "message: The file has 5 bytes.", "result end_turn"}},
		{"read error", func(c *testClient, id json.RawMessage) {
			c.write(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32603, "message": "no"}})
		}, []string{"tool_call_update call-1 failed", "message: The file could not be read.", "result end_turn"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := startAgent(t, Options{Scenario: "tools"})
			pid := c.prompt(c.session())
			var got []string
			for range 3 {
				got = append(got, summarize(c.nextLine()))
			}
			req := c.next()
			if req.Method != "fs/read_text_file" || req.ID == nil {
				t.Fatalf("got %+v, want an fs/read_text_file request", req)
			}
			want := []string{"thought: I should read the file.", `tool_call call-1 "Read File" pending`, "tool_call_update call-1 in_progress"}
			if !slices.Equal(got, want) {
				t.Errorf("before the request: got %q, want %q", got, want)
			}
			tt.reply(c, req.ID)
			if got := c.turn(pid); !slices.Equal(got, tt.want) {
				t.Errorf("after the response: got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEffects(t *testing.T) {
	c := startAgent(t, Options{Scenario: "effects"})
	sid := c.session()
	pid := c.prompt(sid)
	var ids []string
	for _, want := range []string{"session/request_permission", "fs/write_text_file", "terminal/create"} {
		m := c.next()
		if m.Method != want || m.ID == nil {
			t.Fatalf("got %+v, want a %s request", m, want)
		}
		if !strings.Contains(string(m.Params), `"sessionId":"`+sid+`"`) {
			t.Errorf("%s params: got %s, want sessionId %s", want, m.Params, sid)
		}
		ids = append(ids, string(m.ID))
		// A response to an id the agent never used is ignored.
		c.respond(json.RawMessage("999"), map[string]any{})
		c.respond(m.ID, map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow"}, "terminalId": "t1"})
	}
	slices.Sort(ids)
	if len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Errorf("request ids: got %q, want distinct ids", ids)
	}
	want := []string{"message: I wrote the file and ran a command.", "result end_turn"}
	if got := c.turn(pid); !slices.Equal(got, want) {
		t.Errorf("after the effects: got %q, want %q", got, want)
	}
}

func TestEchoAndMirror(t *testing.T) {
	payloads := [][]byte{
		[]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"x":"\u00e9 ☃ \"q\" \\ \n"}}` + "\n"),
		[]byte("this is not json {\r\n"),
		[]byte("\n"),
		[]byte("no newline at the end"),
		[]byte(strings.Repeat("é", 300_000) + "\n"), // longer than the read buffer
	}
	c := startAgent(t, Options{Scenario: "echo"})
	for i, p := range payloads {
		enc := base64.StdEncoding.EncodeToString(p)
		want := p
		if !strings.HasSuffix(string(p), "\n") {
			want = append(slices.Clone(p), '\n')
		}
		if i%2 == 0 {
			c.notify("test/echo", map[string]any{"payload": enc})
		} else {
			id := c.request("test/echo", map[string]any{"payload": enc})
			if got := c.nextLine(); string(got) != string(want) {
				t.Errorf("echo %d: got %q, want %q", i, truncate(got), truncate(want))
			}
			if m := c.next(); string(m.ID) != string(id) || string(m.Result) != "{}" {
				t.Errorf("echo %d: got %+v, want {} for id %s", i, m, id)
			}
			continue
		}
		if got := c.nextLine(); string(got) != string(want) {
			t.Errorf("echo %d: got %q, want %q", i, truncate(got), truncate(want))
		}
	}
	if m := c.call("test/echo", map[string]any{"payload": "!!"}); m.Error == nil || m.Error.Code != codeInvalidParams {
		t.Errorf("bad payload: got %+v, want -32602", m)
	}

	line := `{"jsonrpc":"2.0","id":"m-1","method":"test/mirror","params":{"s":"\u00e9\t` + strings.Repeat("x", 100_000) + `"}}`
	c.writeRaw([]byte(line + "\r\n"))
	m := c.next()
	var r struct{ Line []byte }
	if err := json.Unmarshal(m.Result, &r); err != nil || string(r.Line) != line {
		t.Errorf("mirror: got %q (%v), want the request line as sent", truncate(r.Line), err)
	}
}

func TestFramesNeverInterleave(t *testing.T) {
	c := startAgent(t, Options{Scenario: "stream", Count: 2000, Size: 300})
	a, b := c.session(), c.session()
	ida, idb := c.prompt(a), c.prompt(b)
	c.notify("test/echo", map[string]any{"payload": base64.StdEncoding.EncodeToString([]byte(`{"echo":true}`))})
	ends, frames := 0, 0
	for ends < 2 {
		line := c.nextLine()
		var m msg
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("frame %d is not one JSON object: %q", frames, truncate(line))
		}
		frames++
		if m.Method == "" && (string(m.ID) == string(ida) || string(m.ID) == string(idb)) {
			ends++
		}
	}
	if want := 2*2000 + 2 + 1; frames != want {
		t.Errorf("frames: got %d, want %d", frames, want)
	}
}

func TestStderrFlood(t *testing.T) {
	c := startAgent(t, Options{Scenario: "stderr-flood", Count: 5000})
	want := []string{"message: Flooding stderr while answering.", "result end_turn"}
	if got := c.turn(c.prompt(c.session())); !slices.Equal(got, want) {
		t.Errorf("turn: got %q, want %q", got, want)
	}
	if got := strings.Count(c.stderr.String(), "flood line"); got != 5000 {
		t.Errorf("stderr flood lines before end_turn: got %d, want 5000", got)
	}
}

func TestGrandchildReportsPid(t *testing.T) {
	c := startAgent(t, Options{Scenario: "grandchild", Grandchild: []string{"true"}})
	c.call("authenticate", map[string]any{})
	if err := c.closeStdin(); err != nil {
		t.Errorf("Run: got %v, want nil", err)
	}
	if !strings.Contains(c.stderr.String(), "started grandchild pid ") {
		t.Errorf("stderr: got %q, want the grandchild's pid", c.stderr.String())
	}
}

// TestLineOver64MiB sends a request line larger than 64 MiB: the agent reads
// it whole and answers it.
func TestLineOver64MiB(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocates about 200 MiB; slow under the race detector")
	}
	c := startAgent(t, Options{})
	line := `{"jsonrpc":"2.0","id":"big","method":"authenticate","params":{"methodId":"demo","_meta":{"pad":"` +
		strings.Repeat("x", 65<<20) + `"}}}` + "\n"
	c.writeRaw([]byte(line))
	if m := c.next(); string(m.ID) != `"big"` || string(m.Result) != "{}" {
		t.Errorf("after a 65 MiB line: got %+v, want {} for id \"big\"", m)
	}
}
