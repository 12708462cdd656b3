package replay

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// fakeClient drives Serve over pipes the way an ACP client would
// (internal/acptest).
type fakeClient struct {
	*acptest.Piped
	t      *testing.T
	code   int           // Serve's, read only after Err
	stderr *bytes.Buffer // read only after Err
	logs   *bytes.Buffer // read only after Err
}

type serveResult struct {
	code int
	err  error
}

// startServe runs Serve on the events; it stops when ctx or the test ends.
func startServe(t *testing.T, ctx context.Context, events []Event, opts ServeOptions) *fakeClient {
	t.Helper()
	c := &fakeClient{t: t, stderr: &bytes.Buffer{}, logs: &bytes.Buffer{}}
	opts.NoDelay = opts.NoDelay || opts.after == nil
	opts.Logger = slog.New(slog.NewTextHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c.Piped = acptest.Pipe(t, acptest.Options{}, func(end context.Context, stdin io.Reader, stdout io.Writer) error {
		sctx, stop := context.WithCancel(ctx)
		defer context.AfterFunc(end, stop)()
		var err error
		c.code, err = Serve(sctx, events, opts, stdin, stdout, c.stderr)
		return err
	})
	return c
}

func (c *fakeClient) send(line string) {
	c.t.Helper()
	c.Send(line + "\n")
}

// recv returns the next line Serve wrote, with its line ending.
func (c *fakeClient) recv() string {
	c.t.Helper()
	return string(c.Line())
}

func (c *fakeClient) expect(want string) {
	c.t.Helper()
	if got := c.recv(); got != want+"\n" {
		c.t.Errorf("got  %q\nwant %q", got, want+"\n")
	}
}

// wait returns Serve's result after checking it wrote nothing more.
func (c *fakeClient) wait() serveResult {
	c.t.Helper()
	if rest := c.RestBytes(); len(rest) > 0 {
		c.t.Errorf("unexpected output after the last expected line: %q", rest)
	}
	err := c.Err()
	return serveResult{c.code, err}
}

func readSample(t *testing.T, name string) []Event {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, errs := ReadAll(f)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return events
}

func TestServeRemapsIDsAndKeepsBytes(t *testing.T) {
	c := startServe(t, context.Background(), readSample(t, "basic.jsonl"), ServeOptions{})
	c.send(`{"jsonrpc":"2.0","id":"init-x","method":"initialize","params":{"protocolVersion":1}}`)
	c.expect(`{"jsonrpc":"2.0","id":"init-x","result":{"protocolVersion":1,"agentInfo":{"name":"demo-agent","version":"1.0"},"agentCapabilities":{}}}`)
	c.send(`{"jsonrpc":"2.0","id":77,"method":"` + acp.AgentMethodSessionNew + `","params":{"cwd":"/elsewhere","mcpServers":[]}}`)
	c.expect(`{"jsonrpc":"2.0", "id" : 77 ,"result":{"sessionId":"s-1"}}`)
	c.expect(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}}`)
	c.send(`{"jsonrpc":"2.0","id":{"odd":"but kept"},"method":"session/prompt","params":{"sessionId":"s-1","prompt":[]}}`)
	c.expect(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hi \u00e9\u2028there"}}}}`)
	c.expect(`{"jsonrpc":"2.0","id":{"odd":"but kept"},"result":{"stopReason":"end_turn"}}`)
	c.send(`{"jsonrpc":"2.0","id":"p\"2","method":"session/prompt","params":{"sessionId":"s-1","prompt":[]}}`)
	c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}`)
	c.expect(`{"jsonrpc":"2.0","id":"p\"2","result":{"stopReason":"cancelled"}}`)
	res := c.wait()
	if res.code != 0 || res.err != nil {
		t.Errorf("got exit %d, %v; want 0, nil", res.code, res.err)
	}
	if got, want := c.stderr.String(), "demo-agent: starting\ndemo-agent: bye\n"; got != want {
		t.Errorf("got stderr %q, want %q", got, want)
	}
}

func TestServeDivergence(t *testing.T) {
	c := startServe(t, context.Background(), readSample(t, "permission.jsonl"), ServeOptions{})
	c.send(`{"jsonrpc":"2.0","id":5,"method":"session/load","params":{}}`)
	c.expect(`{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"replay: client diverged from recording: expected session/new, got session/load"}}`)
	c.send(`{"jsonrpc":"2.0","id":"n","method":"session/new","params":{}}`)
	c.expect(`{"jsonrpc":"2.0","id":"n","result":{"sessionId":"p1"}}`)
	c.send(`{"jsonrpc":"2.0","id":6,"method":"session/new","params":{}}`) // one more than recorded
	c.expect(`{"jsonrpc":"2.0","id":6,"error":{"code":-32603,"message":"replay: client diverged from recording: expected session/prompt, got session/new"}}`)
	c.send(`{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{}}`)
	c.expect(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"p1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Write a.txt","kind":"edit","status":"pending"}}}`)
	c.expect(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"p1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}`)
	c.send(`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
	c.expect(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"p1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}}}`)
	c.expect(`{"jsonrpc":"2.0","id":9,"result":{"stopReason":"end_turn"}}`)
	c.send(`{"jsonrpc":"2.0","id":10,"method":"session/prompt","params":{}}`)
	c.expect(`{"jsonrpc":"2.0","id":10,"error":{"code":-32603,"message":"replay: client diverged from recording: expected end of recording, got session/prompt"}}`)
	c.CloseStdin() // no recorded exit: Serve ends with the client's input
	res := c.wait()
	if res.code != 0 || res.err != nil {
		t.Errorf("got exit %d, %v; want 0, nil", res.code, res.err)
	}
	if got := strings.Count(c.logs.String(), "client diverged from recording"); got != 3 {
		t.Errorf("got %d divergence logs, want 3:\n%s", got, c.logs.String())
	}
}

// TestServeAgentView serves a transcript with the proxy's own marks: frames
// via the guard are not replayed, suppressed agent frames are, the proxy's
// own retry request matches a live request, and the signal becomes 128+N.
func TestServeAgentView(t *testing.T) {
	c := startServe(t, context.Background(), readSample(t, "cursor_retriable.jsonl"), ServeOptions{})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	c.expect(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"cursor-agent"}}}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}`)
	c.expect(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"c1"}}`)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{}}`)
	c.expect(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)"}}}}`)
	c.expect(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
	// A guard in front retries with its own id.
	c.send(`{"jsonrpc":"2.0","id":"acp-guard-7","method":"session/prompt","params":{}}`)
	if got, want := c.recv(), `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Done."}}}}`+"\r\n"; got != want {
		t.Errorf("got  %q\nwant %q (CRLF kept)", got, want)
	}
	c.expect(`{"jsonrpc":"2.0","id":"acp-guard-7","result":{"stopReason":"end_turn"}}`)
	c.expect(`panic: runtime error: index out of range`)
	res := c.wait()
	if res.code != 128+9 || res.err != nil {
		t.Errorf("got exit %d, %v; want 137, nil", res.code, res.err)
	}
	if got, want := c.stderr.String(), "\x1b[31mfatal\x1b[0m: worker died\n"; got != want {
		t.Errorf("got stderr %q, want %q", got, want)
	}
}

// TestServeWaitsForInputs steps the server by hand: it must not go past a
// recorded request or a recorded client response before the live client
// sent it, and it does not wait for client notifications.
func TestServeWaitsForInputs(t *testing.T) {
	var out bytes.Buffer
	s := newServer(readSample(t, "permission.jsonl"), ServeOptions{NoDelay: true}, &out, io.Discard)
	step := func(wantKind stateKind, wantOut string) {
		t.Helper()
		st := s.advance()
		if st.kind != wantKind {
			t.Fatalf("got state %v, want %v", st.kind, wantKind)
		}
		if got := out.String(); got != wantOut {
			t.Fatalf("got output %q, want %q", got, wantOut)
		}
		out.Reset()
	}
	receive := func(line string) {
		t.Helper()
		if err := s.receive([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	step(stBlocked, "")
	receive(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`) // consumed, unblocks nothing
	step(stBlocked, "")
	receive(`{"jsonrpc":"2.0","id":1,"method":"session/new"}`)
	step(stBlocked, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"p1"}}`+"\n")
	receive(`{"jsonrpc":"2.0","id":0,"result":{}}`) // answers nothing sent yet... but is counted
	receive(`{"jsonrpc":"2.0","id":2,"method":"session/prompt"}`)
	st := s.advance()
	if st.kind != stDone {
		t.Fatalf("an early answer to the permission request should let the turn finish; got state %v", st.kind)
	}
	if got := strings.Count(out.String(), "\n"); got != 4 {
		t.Errorf("got %d lines, want 4:\n%s", got, out.String())
	}

	// Without the answer, the server stops right after the permission request.
	out.Reset()
	s = newServer(readSample(t, "permission.jsonl"), ServeOptions{NoDelay: true}, &out, io.Discard)
	receive(`{"jsonrpc":"2.0","id":1,"method":"session/new"}`)
	receive(`{"jsonrpc":"2.0","id":2,"method":"session/prompt"}`)
	st = s.advance()
	if st.kind != stBlocked || !strings.HasSuffix(out.String(), `"method":"session/request_permission","params":{"sessionId":"p1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}`+"\n") {
		t.Fatalf("got state %v after %q, want blocked after the permission request", st.kind, out.String())
	}
	receive(`{"jsonrpc":"2.0","id":55,"result":{}}`) // not a request the agent made
	if st := s.advance(); st.kind != stBlocked {
		t.Fatalf("an answer to an unknown id unblocked the server: state %v", st.kind)
	}
	receive(`{"jsonrpc":"2.0","id":0,"result":{}}`)
	if st := s.advance(); st.kind != stDone {
		t.Fatalf("got state %v, want done", st.kind)
	}
}

// TestServeTiming checks the delays Serve asks the clock for: recorded gaps
// scaled by 1/Speed, measured from the last input for outputs that follow
// one.
func TestServeTiming(t *testing.T) {
	events := []Event{
		{TMs: 100, Dir: DirStderr, Msg: []byte(`"a"`)},
		{TMs: 300, Dir: DirC2A, Msg: []byte(`{"id":1,"method":"m"}`)},
		{TMs: 340, Dir: DirA2C, Msg: []byte(`{"id":1,"result":1}`)},
		{TMs: 1340, Dir: DirStderr, Msg: []byte(`"b"`)},
		{TMs: 1340, Dir: DirExit, Code: ptr(0)},
	}
	for _, tt := range []struct {
		name  string
		opts  ServeOptions
		delay []time.Duration
	}{
		{"recorded pace", ServeOptions{}, []time.Duration{100 * time.Millisecond, 40 * time.Millisecond, time.Second}},
		{"twice as fast", ServeOptions{Speed: 2}, []time.Duration{50 * time.Millisecond, 20 * time.Millisecond, 500 * time.Millisecond}},
		{"no delay", ServeOptions{Speed: 2, NoDelay: true}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			var delays []time.Duration
			tt.opts.now = func() time.Time { return now }
			tt.opts.after = func(d time.Duration) <-chan time.Time {
				delays = append(delays, d)
				now = now.Add(d)
				ch := make(chan time.Time, 1)
				ch <- now
				return ch
			}
			c := startServe(t, context.Background(), events, tt.opts)
			c.send(`{"id":"x","method":"m"}`)
			c.expect(`{"id":"x","result":1}`)
			if res := c.wait(); res.code != 0 || res.err != nil {
				t.Fatalf("got %d, %v", res.code, res.err)
			}
			if len(delays) != len(tt.delay) {
				t.Fatalf("got delays %v, want %v", delays, tt.delay)
			}
			for i := range delays {
				if delays[i] != tt.delay[i] {
					t.Errorf("got delays %v, want %v", delays, tt.delay)
					break
				}
			}
		})
	}
}

func TestServeClientClosesEarly(t *testing.T) {
	c := startServe(t, context.Background(), readSample(t, "basic.jsonl"), ServeOptions{})
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize"}`)
	c.recv()
	c.CloseStdin()
	res := c.wait()
	if res.code != 0 || res.err != nil {
		t.Errorf("got %d, %v; want 0, nil", res.code, res.err)
	}
	if !strings.Contains(c.logs.String(), "client closed its input before the recording ended") || !strings.Contains(c.logs.String(), "method=session/new") {
		t.Errorf("want a log naming the awaited request, got:\n%s", c.logs.String())
	}
}

func TestServeIgnoresBadClientLines(t *testing.T) {
	c := startServe(t, context.Background(), readSample(t, "permission.jsonl"), ServeOptions{})
	c.send(`not json`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":3}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"session/new"}`)
	c.expect(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"p1"}}`)
	c.CloseStdin()
	c.wait()
	if got := strings.Count(c.logs.String(), "not a JSON-RPC message"); got != 2 {
		t.Errorf("got %d bad-line logs, want 2:\n%s", got, c.logs.String())
	}
}

func TestServeContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := startServe(t, ctx, readSample(t, "basic.jsonl"), ServeOptions{})
	cancel()
	res := c.wait()
	if res.err != context.Canceled {
		t.Errorf("got %d, %v; want context.Canceled", res.code, res.err)
	}
}

// brokenWriter fails every write, like a client that went away.
type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestServeWriteFailure(t *testing.T) {
	events := []Event{{TMs: 0, Dir: DirA2C, Msg: []byte(`{"method":"hello"}`)}}
	code, err := Serve(context.Background(), events, ServeOptions{NoDelay: true}, strings.NewReader(""), brokenWriter{}, io.Discard)
	if code != 1 || err == nil || !strings.Contains(err.Error(), "writing to client") {
		t.Errorf("got %d, %v; want 1 and a write error", code, err)
	}
}

func TestServeRefusesNegativeSpeed(t *testing.T) {
	_, err := Serve(context.Background(), nil, ServeOptions{Speed: -1}, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil {
		t.Error("got nil, want an error")
	}
}

func TestParseFrame(t *testing.T) {
	for _, tt := range []struct {
		frame  string
		kind   frameKind
		method string
		id     string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"a"}`, kindRequest, "a", "1"},
		{` { "method" : "n" , "params" : {"id":9} } `, kindNotification, "n", ""},
		{`{"result":{"id":"inner"},"id":"outer"}`, kindResponse, "", `"outer"`},
		{`{"id":[1,"]"],"method":"x\"y"}`, kindRequest, `x"y`, `[1,"]"]`},
		{`{"method":1,"id":1}`, kindOther, "", "1"},
		{`[{"id":1}]`, kindOther, "", ""},
		{`"id"`, kindOther, "", ""},
		{`{}`, kindOther, "", ""},
	} {
		fi := parseFrame([]byte(tt.frame))
		if fi.kind != tt.kind || fi.method != tt.method || string(fi.id) != tt.id {
			t.Errorf("parseFrame(%s) = kind %v method %q id %s; want %v %q %s", tt.frame, fi.kind, fi.method, fi.id, tt.kind, tt.method, tt.id)
		}
	}
	frame := []byte(`{"result":{"id":3},"id" :  1 }`)
	if got, want := string(withID(frame, parseFrame(frame), []byte(`"z"`))), `{"result":{"id":3},"id" :  "z" }`; got != want {
		t.Errorf("withID: got %s, want %s", got, want)
	}
}

func TestReadInput(t *testing.T) {
	in := "a\r\n" + strings.Repeat("x", 200<<10) + "\n\nlast"
	inputs := make(chan input)
	go readInput(strings.NewReader(in), 100<<10, inputs, make(chan struct{}))
	var got []string
	for i := range inputs {
		if i.err != nil {
			got = append(got, "error: "+i.err.Error())
			continue
		}
		got = append(got, string(i.line))
	}
	want := []string{"a\r", "error: line too long (limit 102400 bytes): line dropped", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestReadInputStops(t *testing.T) {
	r, w := io.Pipe()
	inputs := make(chan input)
	stop := make(chan struct{})
	exited := make(chan struct{})
	go func() { readInput(r, MaxLineBytes, inputs, stop); close(exited) }()
	close(stop)
	io.WriteString(w, "{}\n") // the reader reads it, cannot send, and exits
	<-exited
	if _, ok := <-inputs; ok {
		t.Error("inputs still open after readInput returned")
	}
	w.Close()
}
