package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// recorder is an Output that keeps what the relay writes, with a fixed
// clock and timers that fire only when the test says so.
type recorder struct {
	now      time.Time
	client   []string
	agent    []string
	timers   []func()
	canceled int
}

func (r *recorder) Now() time.Time          { return r.now }
func (r *recorder) WriteClient(line []byte) { r.client = append(r.client, string(line)) }
func (r *recorder) WriteAgent(line []byte)  { r.agent = append(r.agent, string(line)) }
func (r *recorder) Schedule(d time.Duration, fire func()) func() bool {
	r.timers = append(r.timers, fire)
	return func() bool { r.canceled++; return true }
}

func newTestRelay(h Hooks) (*Relay, *recorder) {
	out := &recorder{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return NewRelay(Config{MaxLine: 1 << 20, Hooks: h}, out), out
}

func line(s string) Line { return Line{Bytes: []byte(s)} }

// hooks is a configurable Hooks: verdicts by method or id, and a record of
// what it saw.
type hooks struct {
	NopHooks
	agentVerdict func(c Ctl, m *Msg, req *Request) Verdict
	proxy        []string // "<method> <tag> <response line>"
	exits        int
}

func (h *hooks) AgentMsg(c Ctl, m *Msg, req *Request) Verdict {
	if h.agentVerdict != nil {
		return h.agentVerdict(c, m, req)
	}
	return Forward
}

func (h *hooks) ProxyResponse(c Ctl, m *Msg, req *Request) {
	h.proxy = append(h.proxy, fmt.Sprintf("%s %v %s", req.Method, req.Tag, strings.TrimSpace(string(m.Line))))
}

func (h *hooks) AgentExit(Ctl, ExitStatus) { h.exits++ }

func TestParseMsg(t *testing.T) {
	for _, tt := range []struct {
		line       string
		kind       Kind
		method, id string
		params     string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":1}}` + "\n", KindRequest, "initialize", "1", `{"a":1}`},
		{`{"jsonrpc":"2.0","id":"x","method":"session/prompt"}` + "\r\n", KindRequest, "session/prompt", `"x"`, ""},
		{` { "method" : "session/update" , "params" : [1] } `, KindNotification, "session/update", "", "[1]"},
		{`{"jsonrpc":"2.0","id":null,"method":"m"}`, KindNotification, "m", "null", ""},
		{`{"jsonrpc":"2.0","id":3,"result":null}` + "\n", KindResponse, "", "3", ""},
		{`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"x"}}`, KindResponse, "", "3", ""},
		{`{"id":3}`, KindOther, "", "3", ""},
		{`{"method":7,"id":1}`, KindOther, "", "1", ""},
		{`{}`, KindOther, "", "", ""},
		{`{"method":"m","id":1`, KindInvalid, "", "", ""}, // truncated
		{`[{"method":"m"}]`, KindInvalid, "", "", ""},
		{"not json\n", KindInvalid, "", "", ""},
		{"\n", KindInvalid, "", "", ""},
		{`{"params":{"id":9,"method":"inner"},"method":"outer"}`, KindNotification, "outer", "", `{"id":9,"method":"inner"}`},
		{`{"method":"a\u002fb","id":2}`, KindRequest, "a/b", "2", ""},
	} {
		t.Run(tt.line, func(t *testing.T) {
			m := ParseMsg([]byte(tt.line))
			if m.Kind == KindInvalid && tt.kind == KindInvalid {
				return // the other fields mean nothing then
			}
			if m.Kind != tt.kind || m.Method != tt.method || string(m.ID) != tt.id || string(m.Params) != tt.params {
				t.Errorf("got kind %v method %q id %q params %q, want %v %q %q %q", m.Kind, m.Method, m.ID, m.Params, tt.kind, tt.method, tt.id, tt.params)
			}
			if string(m.Line) != tt.line {
				t.Errorf("Line %q, want the input", m.Line)
			}
		})
	}
}

func TestKeyOf(t *testing.T) {
	for _, tt := range []struct {
		a, b  string
		equal bool
	}{
		{`7`, ` 7 `, true},
		{`7`, `"7"`, false},
		{`"a"`, `"\u0061"`, true},
		{`"acp-guard:1"`, `"acp-guard:1"`, true},
		{`2`, `2.0`, true}, // numbers compare by value
		{`2`, `2e0`, true},
		{`2`, `20e-1`, true},
		{`2`, `0.2E1`, true},
		{`200`, `2e2`, true},
		{`0`, `-0`, true},
		{`0`, `0.000`, true},
		{`-2`, `2`, false},
		{`2`, `2.5`, false},
		{`9007199254740993`, `9007199254740992`, false}, // no float rounding
		{`12`, `"12"`, false},
		{`01`, `1`, false}, // not a JSON number: compared as spelled
		{`1e99999999999`, `1e99999999999`, true},
	} {
		if got := KeyOf([]byte(tt.a)) == KeyOf([]byte(tt.b)); got != tt.equal {
			t.Errorf("KeyOf(%s) == KeyOf(%s): got %v, want %v", tt.a, tt.b, got, tt.equal)
		}
	}
}

func TestRequestTable(t *testing.T) {
	tbl := newRequestTable()
	now := time.Unix(100, 0)
	add := func(origin Origin, s string, keep bool) (*Request, bool) {
		m := ParseMsg([]byte(s))
		var params []byte
		if keep {
			params = append([]byte(nil), m.Params...)
		}
		return tbl.add(origin, &m, now, params)
	}
	r1, dup := add(FromClient, `{"id":1,"method":"session/prompt","params":{"sessionId":"s-1","prompt":[]}}`, true)
	if dup || r1.SessionID != "s-1" || r1.Method != "session/prompt" || string(r1.Params) != `{"sessionId":"s-1","prompt":[]}` {
		t.Errorf("got %+v dup %v", r1, dup)
	}
	r2, _ := add(FromClient, `{"id":"b","method":"session/new","params":{"cwd":"/"}}`, false)
	if r2.Params != nil || r2.SessionID != "" {
		t.Errorf("params kept or session invented: %+v", r2)
	}
	ra, _ := add(FromAgent, `{"id":1,"method":"fs/read_text_file","params":{"sessionId":"s-1"}}`, false)
	if ra.Origin != FromAgent || tbl.client[KeyOf([]byte("1"))] != r1 {
		t.Errorf("the agent's id 1 must not touch the client's id 1")
	}
	r3, _ := add(FromClient, `{"id":3,"method":"x"}`, false)
	if _, dup := add(FromClient, `{"id":"b","method":"again"}`, false); !dup {
		t.Errorf("reusing a pending id is not reported")
	}
	var got []string
	for _, r := range tbl.pendingClient() {
		got = append(got, r.Method)
	}
	if want := []string{"session/prompt", "x", "again"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pending in order %v, want %v", got, want)
	}
	if !(r1.Seq < r2.Seq && r2.Seq < ra.Seq && ra.Seq < r3.Seq) {
		t.Errorf("sequence numbers not in arrival order")
	}
	p1, p2 := tbl.newProxy("session/prompt", "s-1", now), tbl.newProxy("session/set_model", "s-1", now)
	if string(p1.ID) != `"acp-guard:1"` || string(p2.ID) != `"acp-guard:2"` || p1.Origin != FromProxy {
		t.Errorf("proxy ids %s, %s, want \"acp-guard:1\", \"acp-guard:2\"", p1.ID, p2.ID)
	}
}

// TestRelayPassThrough: frames go on unchanged, requests are tracked and
// a response clears its request.
func TestRelayPassThrough(t *testing.T) {
	r, out := newTestRelay(nil)
	in := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\r\n",
		"not json\n",
		"\n",
	}
	for _, s := range in {
		r.FromClient(line(s))
	}
	if fmt.Sprint(out.agent) != fmt.Sprint(in) {
		t.Errorf("agent got %q, want %q", out.agent, in)
	}
	if n := len(r.PendingClient()); n != 1 {
		t.Fatalf("%d pending, want 1", n)
	}
	resp := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	r.FromAgent(line(resp))
	if len(out.client) != 1 || out.client[0] != resp {
		t.Errorf("client got %q, want %q", out.client, resp)
	}
	if n := len(r.PendingClient()); n != 0 {
		t.Errorf("%d pending after the response, want 0", n)
	}
	if r.Counts.ClientFrames != 3 || r.Counts.InvalidFromClient != 2 || r.Counts.AgentFrames != 1 {
		t.Errorf("counts %+v", r.Counts)
	}
}

// TestRelayReplyOnce: a hook's Reply answers a pending request once; a
// second Reply writes nothing and says so.
func TestRelayReplyOnce(t *testing.T) {
	h := &hooks{}
	r, out := newTestRelay(h)
	r.FromClient(line(`{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s"}}` + "\n"))
	req := r.PendingClient()[0]
	first := string(ErrorResponse(req.ID, -32603, "first", nil))
	if !r.Reply(req, []byte(first)) {
		t.Fatalf("first Reply returned false")
	}
	if r.Reply(req, ErrorResponse(req.ID, -32603, "second", nil)) {
		t.Errorf("second Reply returned true")
	}
	if r.Pending(req) {
		t.Errorf("still pending after Reply")
	}
	if len(out.client) != 1 || out.client[0] != first {
		t.Errorf("client got %q, want only %q", out.client, first)
	}
	// After the agent exits nothing more is sent for it.
	r.AgentExited(ExitStatus{Code: 1})
	if len(out.client) != 1 {
		t.Errorf("client got %q after exit, want nothing more", out.client[1:])
	}
}

// TestRelayHold: a held response keeps its request pending, and the hook
// can answer it later, once.
func TestRelayHold(t *testing.T) {
	h := &hooks{}
	var held *Request
	h.agentVerdict = func(c Ctl, m *Msg, req *Request) Verdict {
		if m.Kind == KindResponse && req != nil && held == nil {
			held = req
			return Hold
		}
		return Forward
	}
	r, out := newTestRelay(h)
	r.FromClient(line(`{"jsonrpc":"2.0","id":5,"method":"session/prompt"}` + "\n"))
	r.FromAgent(line(`{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}` + "\n"))
	if len(out.client) != 0 || held == nil || !r.Pending(held) {
		t.Fatalf("held response: client got %q, pending %v", out.client, held != nil && r.Pending(held))
	}
	r.AgentExited(ExitStatus{Code: 3})
	if len(out.client) != 1 || !strings.Contains(out.client[0], `"id":5,"error"`) {
		t.Fatalf("client got %q, want one error for id 5", out.client)
	}
	if r.Reply(held, []byte("late\n")) || len(out.client) != 1 {
		t.Errorf("a request answered at exit was answered again")
	}
}

// TestRelayExitAnswersOnce: every pending client request gets exactly one
// error when the agent exits, in arrival order; later requests are
// answered at once; a second exit changes nothing.
func TestRelayExitAnswersOnce(t *testing.T) {
	h := &hooks{}
	r, out := newTestRelay(h)
	for _, id := range []string{`1`, `"two"`, `3`} {
		r.FromClient(line(`{"jsonrpc":"2.0","id":` + id + `,"method":"m"}` + "\n"))
	}
	r.FromAgent(line(`{"jsonrpc":"2.0","id":"two","result":{}}` + "\n"))
	r.Stderr("fatal: \x1b[31mboom\x1b[0m")
	r.AgentExited(ExitStatus{Code: 137, Signal: "SIGKILL"})
	r.AgentExited(ExitStatus{Code: 0})
	r.FromClient(line(`{"jsonrpc":"2.0","id":4,"method":"late"}` + "\n"))
	if h.exits != 1 {
		t.Errorf("AgentExit hook ran %d times, want 1", h.exits)
	}
	var ids []string
	for _, s := range out.client[1:] {
		var m struct {
			ID    json.RawMessage
			Error struct {
				Code    int
				Message string
				Data    struct{ AgentExit map[string]any }
			}
		}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		ids = append(ids, string(m.ID))
		if m.Error.Code != -32603 || !strings.Contains(m.Error.Message, "SIGKILL") || m.Error.Data.AgentExit["signal"] != "SIGKILL" {
			t.Errorf("got %s", s)
		}
	}
	if want := []string{"1", "3", "4"}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("errors for %v, want %v", ids, want)
	}
	if len(out.agent) != 3 {
		t.Errorf("the request after exit reached the agent: %q", out.agent)
	}
}

// TestRelayProxyNamespace: the answer to a proxy Call goes to the hook and
// never to the client; a client id that merely looks similar is untouched.
func TestRelayProxyNamespace(t *testing.T) {
	h := &hooks{}
	r, out := newTestRelay(h)
	r.FromClient(line(`{"jsonrpc":"2.0","id":1,"method":"session/prompt"}` + "\n"))
	req := r.Call("session/set_model", "s-1", []byte(`{"sessionId":"s-1","modelId":"b"}`), "tag-1")
	want := `{"jsonrpc":"2.0","id":"acp-guard:1","method":"session/set_model","params":{"sessionId":"s-1","modelId":"b"}}` + "\n"
	if len(out.agent) != 2 || out.agent[1] != want {
		t.Fatalf("agent got %q, want %q last", out.agent, want)
	}
	r.FromAgent(line(`{"jsonrpc":"2.0","id":"acp-guard:1","result":{}}` + "\n"))
	r.FromAgent(line(`{"jsonrpc":"2.0","id":"acp-guard:1","result":{"again":true}}` + "\n")) // not pending any more: passes
	if len(h.proxy) != 1 || h.proxy[0] != `session/set_model tag-1 {"jsonrpc":"2.0","id":"acp-guard:1","result":{}}` {
		t.Errorf("proxy responses %q", h.proxy)
	}
	for _, s := range out.client {
		if strings.Contains(s, `"result":{}`) {
			t.Errorf("the client saw the proxy's answer: %q", s)
		}
	}
	if req.SessionID != "s-1" || !r.Pending(r.PendingClient()[0]) {
		t.Errorf("the client's own request was disturbed")
	}
	// A call still out when the agent exits is answered to the hook.
	r.Call("session/prompt", "s-1", nil, "tag-2")
	r.AgentExited(ExitStatus{Code: 1})
	if len(h.proxy) != 2 || !strings.HasPrefix(h.proxy[1], `session/prompt tag-2 {"jsonrpc":"2.0","id":"acp-guard:2","error"`) {
		t.Errorf("proxy responses %q", h.proxy)
	}
	// And a call after exit is answered at once, without writing.
	nAgent := len(out.agent)
	r.Call("session/prompt", "s-1", nil, "tag-3")
	if len(h.proxy) != 3 || len(out.agent) != nAgent {
		t.Errorf("call after exit: proxy %q, agent writes %d → %d", h.proxy, nAgent, len(out.agent))
	}
}

// TestRelayOversizeResponse: a discarded response answers its request with
// one error naming the cause; a discarded notification answers nothing.
func TestRelayOversizeResponse(t *testing.T) {
	r, out := newTestRelay(nil)
	r.FromClient(line(`{"jsonrpc":"2.0","id":9,"method":"x"}` + "\n"))
	r.FromAgent(Line{oversize: 5 << 20, head: []byte(`{"jsonrpc":"2.0","method":"n","params":{"s":"aaa`)})
	if len(out.client) != 0 {
		t.Fatalf("client got %q for a discarded notification", out.client)
	}
	r.FromAgent(Line{oversize: 5 << 20, head: []byte(`{"jsonrpc":"2.0","id":9,"result":"aaa`)})
	if len(out.client) != 1 || !strings.Contains(out.client[0], `"id":9,"error":{"code":-32603`) || !strings.Contains(out.client[0], "5242880 bytes") {
		t.Fatalf("client got %q", out.client)
	}
	r.FromAgent(Line{oversize: 5 << 20, tail: []byte(`aaa"},"id":9}` + "\n")})
	r.AgentExited(ExitStatus{})
	if len(out.client) != 1 {
		t.Errorf("id 9 answered again: %q", out.client[1:])
	}
	if r.Counts.OversizeFromAgent != 3 {
		t.Errorf("OversizeFromAgent = %d, want 3", r.Counts.OversizeFromAgent)
	}
}

func TestErrorResponse(t *testing.T) {
	got := string(ErrorResponse([]byte(`"a"`), -32603, "bad \"thing\"\n", map[string]any{"k": 1}))
	want := `{"jsonrpc":"2.0","id":"a","error":{"code":-32603,"message":"bad \"thing\"\n","data":{"k":1}}}` + "\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := string(ErrorResponse(nil, -32600, "x", nil)); got != `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}`+"\n" {
		t.Errorf("nil id: got %q", got)
	}
}

func TestStripANSI(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b[1;31mred\x1b[0m":       "red",
		"\x1b]0;title\x07text":       "text",
		"\x1b]8;;http://x\x1b\\link": "link",
		"plain\r":                    "plain",
		"\x1b[?25lhidden\x1b[?25h":   "hidden",
	} {
		if got := StripANSI(in); got != want {
			t.Errorf("StripANSI(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAppendChunk(t *testing.T) {
	buf := []byte("aaa\nbb\nc\nddd\n")
	a, b, c, d := buf[0:4], buf[4:7], buf[7:9], buf[9:13]
	other := []byte("x\n")

	chunks := appendChunk(nil, a)
	chunks = appendChunk(chunks, b) // adjacent: merged
	chunks = appendChunk(chunks, c) // adjacent: merged
	if len(chunks) != 1 || string(chunks[0]) != "aaa\nbb\nc\n" {
		t.Fatalf("got %q, want one merged chunk", chunks)
	}
	chunks = appendChunk(chunks, other) // elsewhere in memory: separate
	chunks = appendChunk(chunks, d)     // adjacent to c, but not to the last chunk
	chunks = appendChunk(chunks, nil)   // empty: ignored
	if fmt.Sprintf("%q", chunks) != `["aaa\nbb\nc\n" "x\n" "ddd\n"]` {
		t.Errorf("got %q", chunks)
	}

	// Not adjacent (a gap), or the same bytes twice: never merged.
	gap := appendChunk(appendChunk(nil, a), c)
	twice := appendChunk(appendChunk(nil, a), a)
	if len(gap) != 2 || len(twice) != 2 {
		t.Errorf("gap: %q, twice: %q", gap, twice)
	}
	// A chunk whose capacity ends at its length cannot grow.
	capped := appendChunk(appendChunk(nil, buf[0:4:4]), b)
	if len(capped) != 2 {
		t.Errorf("capped: %q", capped)
	}
	// Merging never changes the bytes.
	if string(buf) != "aaa\nbb\nc\nddd\n" {
		t.Errorf("buffer modified: %q", buf)
	}
}

// TestExitStderrRedacted: the stderr lines in an exit error pass through
// the redactor (they are kept raw and redacted when used).
func TestExitStderrRedacted(t *testing.T) {
	v := NewVirtual(time.Unix(0, 0))
	r := NewRelay(Config{Redact: func(s string) string { return strings.ReplaceAll(s, "sk-secret", "[redacted-key]") }}, v)
	r.FromClient(Line{Bytes: []byte(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}` + "\n")})
	r.Stderr("auth failed with key sk-secret")
	r.AgentExited(ExitStatus{Code: 1})
	got := v.TakeClient()
	if len(got) != 1 || strings.Contains(string(got[0]), "sk-secret") || !strings.Contains(string(got[0]), "[redacted-key]") {
		t.Errorf("exit error = %q, want the stderr line redacted", got)
	}
}

// keepHooks keeps session/prompt params.
type keepHooks struct{ NopHooks }

func (keepHooks) KeepParams(method string) bool { return method == "session/prompt" }

// byteOutput keeps the frames written, uncopied.
type byteOutput struct {
	recorder
	agentLines [][]byte
}

func (o *byteOutput) WriteAgent(line []byte) { o.agentLines = append(o.agentLines, line) }

// TestRelayKeepsLongPromptOnce: a session/prompt long enough to be read
// into a line area is kept for a retry without a second copy — the
// request's params are a span of the very line written to the agent —
// while a short one's params are a copy (its batch buffer is reused).
func TestRelayKeepsLongPromptOnce(t *testing.T) {
	a := newLineArea(1 << 20)
	if a == nil {
		t.Skip("no line mapping on this OS (Windows): a long line is read onto the heap, where it is not held in place")
	}
	a.free()
	for _, n := range []int{100, 3 * readBufSize} {
		text := strings.Repeat("x", n)
		frame := `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"` + text + `"}]}}` + "\n"
		lr := newLineReader(strings.NewReader(frame), 1<<30)
		b, _ := lr.next()
		if len(b.lines) != 1 {
			t.Fatalf("%d lines", len(b.lines))
		}
		out := &byteOutput{}
		r := NewRelay(Config{MaxLine: 1 << 30, Hooks: keepHooks{}}, out)
		r.FromClient(b.lines[0])
		req := r.PendingClient()[0]
		sent := out.agentLines[0]
		if string(sent) != frame {
			t.Fatalf("n=%d: frame damaged", n)
		}
		shared := &req.Params[0] == &sent[bytes.Index(sent, []byte(`{"sessionId"`))]
		b.release() // the loop releases the batch once it is written
		// A long line's mapping now belongs to the request: collections
		// while the request is referenced leave it mapped.
		runtime.GC()
		runtime.GC()
		if !strings.Contains(string(req.Params), text) {
			t.Fatalf("n=%d: params damaged after the batch was released", n)
		}
		if long := n > readBufSize; shared != long {
			t.Errorf("n=%d: params share the written line's memory: %v, want %v", n, shared, long)
		}
	}
}

// TestRelayOversizeProxyAnswer: the agent's answer to a request of the
// proxy's own (a retry) is over the cap: the owner gets an error instead
// of waiting for ever, and the client gets nothing with the proxy's id.
// An oversized request of the agent's that reuses a pending client id
// answers nothing.
func TestRelayOversizeProxyAnswer(t *testing.T) {
	h := &hooks{}
	r, out := newTestRelay(h)
	r.FromClient(line(`{"jsonrpc":"2.0","id":5,"method":"x"}` + "\n"))
	req := r.Call("session/prompt", "s", []byte(`{}`), "retry")
	r.FromAgent(Line{oversize: 5 << 20, head: []byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"aaa`)})
	if len(h.proxy) != 1 || !strings.Contains(h.proxy[0], "line_too_long") {
		t.Fatalf("proxy responses %q, want the line_too_long error", h.proxy)
	}
	r.FromAgent(Line{oversize: 5 << 20, head: []byte(`{"jsonrpc":"2.0","id":5,"method":"fs/read_text_file","params":{"s":"aaa`)})
	if len(out.client) != 0 {
		t.Errorf("client got %q", out.client)
	}
}
