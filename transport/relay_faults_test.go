package transport

import (
	"strings"
	"testing"
)

// TestRelayLastLine: a stream's last line without its newline is a frame
// (forwarded with one) only when it is a complete JSON object.
func TestRelayLastLine(t *testing.T) {
	for _, tt := range []struct {
		name      string
		in        string
		fromAgent bool
		want      []string // what reaches the other side
		wantBack  []string // what goes back to the sender (client only)
		fragments uint64
	}{
		{name: "agent complete", in: `{"jsonrpc":"2.0","method":"x"}`, fromAgent: true, want: []string{`{"jsonrpc":"2.0","method":"x"}` + "\n"}},
		{name: "agent fragment", in: `{"jsonrpc":"2.0","method":"x","params":{`, fromAgent: true, fragments: 1},
		{name: "agent number", in: `12`, fromAgent: true, fragments: 1}, // may be the start of 123
		{name: "agent blank", in: "\r", fromAgent: true},
		{name: "client complete", in: `{"jsonrpc":"2.0","method":"x"}`, want: []string{`{"jsonrpc":"2.0","method":"x"}` + "\n"}},
		{name: "client fragment with id", in: `{"jsonrpc":"2.0","id":"q","method":"x","params":{"a":`, fragments: 1,
			wantBack: []string{"-32700"}},
		{name: "client fragment without id", in: `{"jsonrpc":"2.0","meth`, fragments: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, out := newTestRelay(&hooks{})
			var got, back []string
			if tt.fromAgent {
				r.FromAgent(line(tt.in))
				got = out.client
				if n := r.Counts.FragmentsFromAgent; n != tt.fragments {
					t.Errorf("agent fragments %d, want %d", n, tt.fragments)
				}
			} else {
				r.FromClient(line(tt.in))
				got, back = out.agent, out.client
				if n := r.Counts.FragmentsFromClient; n != tt.fragments {
					t.Errorf("client fragments %d, want %d", n, tt.fragments)
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("forwarded %q, want %q", got, tt.want)
			}
			if len(back) != len(tt.wantBack) {
				t.Fatalf("answered %q, want %d answers", back, len(tt.wantBack))
			}
			for i, w := range tt.wantBack {
				if !strings.Contains(back[i], w) || !strings.HasSuffix(back[i], "\n") {
					t.Errorf("answer %q lacks %q or its newline", back[i], w)
				}
			}
		})
	}
}

// TestRelayIDRestored: a response whose id the agent spelled differently
// answers the request and carries the client's id bytes; the agent's
// answer to a proxy request that is no longer pending is dropped.
func TestRelayIDRestored(t *testing.T) {
	h := &hooks{}
	r, out := newTestRelay(h)
	r.FromClient(line(`{"jsonrpc":"2.0","id":2,"method":"x/a","params":{}}` + "\n"))
	r.FromAgent(line(`{"jsonrpc":"2.0","result":{"k":[1,2]}, "id" : 2.0 }` + "\n"))
	if want := `{"jsonrpc":"2.0","result":{"k":[1,2]}, "id" : 2 }` + "\n"; len(out.client) != 1 || out.client[0] != want {
		t.Fatalf("client got %q, want %q", out.client, want)
	}
	if len(r.PendingClient()) != 0 || r.Counts.IDsRestored != 1 {
		t.Errorf("pending %d, restored %d; want 0, 1", len(r.PendingClient()), r.Counts.IDsRestored)
	}
	req := r.Call("session/prompt", "s", []byte(`{}`), "tag")
	ans := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{}}` + "\n"
	r.FromAgent(line(ans))
	r.FromAgent(line(ans)) // the duplicate
	if len(out.client) != 1 || len(h.proxy) != 1 || r.Counts.DuplicateProxyAnswers != 1 {
		t.Errorf("client %q, proxy answers %q, duplicates %d; want 1 client frame, 1 proxy answer, 1 duplicate", out.client, h.proxy, r.Counts.DuplicateProxyAnswers)
	}
}

// TestRelayStoppingRefusesCalls: after Stopping, a request of the proxy's
// own is not written to the agent; its owner gets an error at once.
func TestRelayStoppingRefusesCalls(t *testing.T) {
	h := &hooks{}
	r, out := newTestRelay(h)
	r.Stopping()
	r.Call("session/prompt", "s", []byte(`{}`), "retry")
	if len(out.agent) != 0 {
		t.Errorf("written to the agent after Stopping: %q", out.agent)
	}
	if len(h.proxy) != 1 || !strings.Contains(h.proxy[0], "shutting down") {
		t.Errorf("proxy answers %q, want one 'shutting down' error", h.proxy)
	}
}

// TestRelayOutputClosed: an agent that closed its stdout leaves nobody to
// answer: pending requests are answered once, later ones at once, and the
// real exit afterwards answers nothing twice.
func TestRelayOutputClosed(t *testing.T) {
	h := &hooks{}
	r, out := newTestRelay(h)
	r.FromClient(line(`{"jsonrpc":"2.0","id":1,"method":"x/a","params":{}}` + "\n"))
	r.agentOutputClosed()
	r.FromClient(line(`{"jsonrpc":"2.0","id":2,"method":"x/b","params":{}}` + "\n"))
	r.AgentExited(ExitStatus{Code: 143, Signal: "SIGTERM"})
	if len(out.client) != 2 || h.exits != 1 {
		t.Fatalf("client got %q with %d exit hooks, want 2 answers and 1 hook", out.client, h.exits)
	}
	for _, c := range out.client {
		if !strings.Contains(c, `"outputClosed":true`) {
			t.Errorf("answer %q lacks agentExit.outputClosed", c)
		}
	}
}
