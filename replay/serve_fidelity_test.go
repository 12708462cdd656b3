package replay

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A recorded provider failure, then the agent killed by the proxy's grace
// after the client left.
const failingThenKilled = `{"t_ms":0,"dir":"meta","argv":["claude-agent-acp"]}
{"t_ms":1,"dir":"c2a","msg":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}}
{"t_ms":2,"dir":"a2c","msg":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}}
{"t_ms":3,"dir":"c2a","msg":{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s"}}}
{"t_ms":4,"dir":"a2c","msg":{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"API Error: 529 overloaded_error"}}}
{"t_ms":5,"dir":"exit","code":-1,"signal":"killed","client_closed":true}
`

func readString(t *testing.T, s string) []Event {
	t.Helper()
	evs, errs := ReadAll(strings.NewReader(s))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return evs
}

// Behind a guard with a policy, a served failure stays a failure: a retry
// (a request the recording has no counterpart for) gets the method's last
// recorded error again, and an agent the proxy killed after its client left
// neither exits before that nor on its own, as the recorded one did not.
func TestServeFailureStaysFaithfulForRetries(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lingering := make(chan struct{})
	c := startServe(t, ctx, readString(t, failingThenKilled), ServeOptions{lingering: func() { close(lingering) }})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	c.expect(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`)
	c.send(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s"}}`)
	c.expect(`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"API Error: 529 overloaded_error"}}`)
	for _, id := range []string{`"acp-guard:1"`, `"acp-guard:2"`} {
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":"s"}}`)
		c.expect(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":"API Error: 529 overloaded_error"}}`)
	}
	// Other methods still diverge.
	c.send(`{"jsonrpc":"2.0","id":9,"method":"session/new","params":{}}`)
	if got := c.recv(); !strings.Contains(got, "client diverged") {
		t.Errorf("got %q, want a divergence error", got)
	}
	c.CloseStdin()
	select {
	case <-lingering:
	case <-c.Done():
		t.Fatalf("Serve ended on the client's EOF (exit %d, %v); the recorded agent stayed until killed", c.code, c.Err())
	}
	cancel() // what the proxy's grace signal does to the served process
	if res := c.wait(); res.code != 128+9 || res.err != nil {
		t.Errorf("got exit %d, %v; want 137, nil", res.code, res.err)
	}
	if !strings.Contains(c.logs.String(), "staying until stopped") {
		t.Errorf("Serve did not linger after the client's EOF:\n%s", c.logs.String())
	}
}

// An exit that followed the client's EOF in the recording, without a
// signal, is played once the live client closes its input.
func TestServeExitAfterClientClosed(t *testing.T) {
	tr := strings.Replace(failingThenKilled, `"code":-1,"signal":"killed"`, `"code":0`, 1)
	c := startServe(t, context.Background(), readString(t, tr), ServeOptions{})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s"}}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s"}}`)
	c.expect(`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"API Error: 529 overloaded_error"}}`)
	c.CloseStdin()
	if res := c.wait(); res.code != 0 || res.err != nil {
		t.Errorf("got exit %d, %v; want 0, nil", res.code, res.err)
	}
}

func TestRecorderMarksExitAfterClientClosed(t *testing.T) {
	var buf bytes.Buffer
	rec := NewRecorder(&buf, RecorderOptions{})
	rec.ExitAfterClientClosed(5, -1, "killed")
	rec.Close()
	if got, want := buf.String(), `{"t_ms":5,"dir":"exit","code":-1,"signal":"killed","client_closed":true}`+"\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
