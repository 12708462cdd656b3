package transport

import (
	"strconv"
	"strings"
	"testing"
)

// tapRec records the frames the relay shows its tap.
type tapRec struct{ frames []string }

func (t *tapRec) Frame(dir Dir, line []byte, via Via, suppressed bool) {
	s := dir.String()
	if suppressed {
		s += " suppressed"
	}
	if via == ViaGuard {
		s += " guard"
	}
	t.frames = append(t.frames, s+" "+strings.TrimSpace(string(line)))
}
func (t *tapRec) Stderr(string)   {}
func (t *tapRec) Exit(ExitStatus) {}
func (t *tapRec) count(p string) int {
	n := 0
	for _, f := range t.frames {
		if strings.HasPrefix(f, p) {
			n++
		}
	}
	return n
}

// TestRelayAnswersOnce: each request gets at most one answer, in both
// directions; a duplicate or an answer to an id never sent is dropped,
// counted and recorded as suppressed, and never delivered.
func TestRelayAnswersOnce(t *testing.T) {
	for _, tt := range []struct {
		name   string
		client []string // frames from the client, then…
		agent  []string // …frames from the agent, then…
		after  []string // …frames from the client
		// what is delivered
		toClient, toAgent int
		want              Counts
	}{
		{name: "agent answers twice", client: []string{`{"jsonrpc":"2.0","id":1,"method":"m"}`},
			agent:    []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":1,"result":{"again":true}}`},
			toClient: 1, toAgent: 1, want: Counts{DuplicateAnswersFromAgent: 1}},
		{name: "agent answers twice, spelled differently", client: []string{`{"jsonrpc":"2.0","id":2,"method":"m"}`},
			agent:    []string{`{"jsonrpc":"2.0","id":2,"result":{}}`, `{"jsonrpc":"2.0","id":2.0,"error":{"code":1,"message":"x"}}`},
			toClient: 1, toAgent: 1, want: Counts{DuplicateAnswersFromAgent: 1}},
		{name: "agent answers an id never sent", client: []string{`{"jsonrpc":"2.0","id":1,"method":"m"}`},
			agent:    []string{`{"jsonrpc":"2.0","id":99,"result":{}}`, `{"jsonrpc":"2.0","id":"1","result":{}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`},
			toClient: 1, toAgent: 1, want: Counts{StrayAnswersFromAgent: 2}},
		{name: "agent answers before any request", agent: []string{`{"jsonrpc":"2.0","id":0,"result":null}`},
			want: Counts{StrayAnswersFromAgent: 1}},
		{name: "agent's null-id error passes", agent: []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
			toClient: 1},
		{name: "agent's null-id result is stray", agent: []string{`{"jsonrpc":"2.0","id":null,"result":{}}`},
			want: Counts{StrayAnswersFromAgent: 1}},
		{name: "client answers twice", agent: []string{`{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{}}`},
			after:    []string{`{"jsonrpc":"2.0","id":7,"result":{"content":""}}`, `{"jsonrpc":"2.0","id":7,"result":{"content":"again"}}`},
			toClient: 1, toAgent: 1, want: Counts{DuplicateAnswersFromClient: 1}},
		{name: "client answers an id never sent", agent: []string{`{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{}}`},
			after:    []string{`{"jsonrpc":"2.0","id":8,"result":{}}`, `{"jsonrpc":"2.0","id":7,"result":{}}`},
			toClient: 1, toAgent: 1, want: Counts{StrayAnswersFromClient: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tap := &tapRec{}
			out := &recorder{}
			r := NewRelay(Config{MaxLine: 1 << 20, Tap: tap}, out)
			for _, f := range tt.client {
				r.FromClient(line(f + "\n"))
			}
			for _, f := range tt.agent {
				r.FromAgent(line(f + "\n"))
			}
			for _, f := range tt.after {
				r.FromClient(line(f + "\n"))
			}
			if len(out.client) != tt.toClient || len(out.agent) != tt.toAgent {
				t.Errorf("delivered %d to the client (%q), %d to the agent (%q); want %d and %d",
					len(out.client), out.client, len(out.agent), out.agent, tt.toClient, tt.toAgent)
			}
			got := Counts{DuplicateAnswersFromAgent: r.Counts.DuplicateAnswersFromAgent, StrayAnswersFromAgent: r.Counts.StrayAnswersFromAgent,
				DuplicateAnswersFromClient: r.Counts.DuplicateAnswersFromClient, StrayAnswersFromClient: r.Counts.StrayAnswersFromClient}
			if got != tt.want {
				t.Errorf("counts %+v, want %+v", got, tt.want)
			}
			dropped := tt.want.DuplicateAnswersFromAgent + tt.want.StrayAnswersFromAgent + tt.want.DuplicateAnswersFromClient + tt.want.StrayAnswersFromClient
			if n := uint64(tap.count("a2c suppressed") + tap.count("c2a suppressed")); n != dropped {
				t.Errorf("%d suppressed frames in the transcript, want %d: %q", n, dropped, tap.frames)
			}
		})
	}
}

// TestRelayLateAnswerAfterProxyReply: the agent's first answer to a request
// the proxy answered is expected (dropped quietly); a second is a
// duplicate.
func TestRelayLateAnswerAfterProxyReply(t *testing.T) {
	h := &hooks{}
	r, out := newTestRelay(h)
	r.FromClient(line(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}` + "\n"))
	req := r.PendingClient()[0]
	r.Reply(req, []byte(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`+"\n"))
	r.FromAgent(line(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}` + "\n"))
	r.FromAgent(line(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}` + "\n"))
	if len(out.client) != 1 {
		t.Errorf("client got %q, want only the proxy's answer", out.client)
	}
	if r.Counts.DuplicateAnswersFromAgent != 1 || r.Counts.StrayAnswersFromAgent != 0 {
		t.Errorf("counts %+v: want the second late answer counted a duplicate", r.Counts)
	}
}

// TestRelayHeldThenDuplicate: while a hook holds a response (the request
// stays pending for a recovery's answer), another agent answer to the same
// id never reaches the hooks or the client.
func TestRelayHeldThenDuplicate(t *testing.T) {
	seen := 0
	h := &hooks{agentVerdict: func(c Ctl, m *Msg, req *Request) Verdict {
		if m.Kind == KindResponse {
			seen++
			return Hold
		}
		return Forward
	}}
	r, out := newTestRelay(h)
	r.FromClient(line(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}` + "\n"))
	r.FromAgent(line(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"overloaded"}}` + "\n"))
	r.FromAgent(line(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}` + "\n"))
	if seen != 1 || len(out.client) != 0 {
		t.Errorf("hooks saw %d responses, client got %q; want 1 and nothing", seen, out.client)
	}
	if len(r.PendingClient()) != 1 || r.Counts.DuplicateAnswersFromAgent != 1 {
		t.Errorf("pending %d, counts %+v; want the held request pending and one duplicate", len(r.PendingClient()), r.Counts)
	}
}

func TestRecentKeysBounded(t *testing.T) {
	var s recentKeys
	key := func(i int) IDKey { return IDKey("x" + strconv.Itoa(i)) }
	for i := range recentAnswers + 10 {
		s.add("a")
		s.add(key(i))
	}
	if len(s.ring) != recentAnswers {
		t.Errorf("ring holds %d keys, want %d", len(s.ring), recentAnswers)
	}
	if s.has(key(0)) || s.has(key(recentAnswers/2)) {
		t.Errorf("the oldest key is still remembered")
	}
	if !s.has(key(recentAnswers+9)) || !s.has("a") {
		t.Errorf("recent keys forgotten")
	}
}
