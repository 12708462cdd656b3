package transport

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestValidFrame(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{"t":"é 🙂"}}` + "\n", `{"jsonrpc":"2.0","id":1,"result":{"t":"é 🙂"}}` + "\n"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"a\xff\xfeb\xc3\"}}\n",
			"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"a\uFFFD\uFFFDb\uFFFD\"}}\n"},
		// The requester's id stays as it came, whatever it holds.
		{"{\"jsonrpc\":\"2.0\",\"id\":\"k\xff\",\"error\":{\"code\":1,\"message\":\"\xe2\x82\"}}\n",
			"{\"jsonrpc\":\"2.0\",\"id\":\"k\xff\",\"error\":{\"code\":1,\"message\":\"\uFFFD\uFFFD\"}}\n"},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"t\":\"\xc0\xaf\"}}\n",
			"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"t\":\"\uFFFD\uFFFD\"}}\n"},
	} {
		got := validFrame([]byte(tt.in))
		if string(got) != tt.want {
			t.Errorf("validFrame(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if m := ParseMsg(got); m.ID == nil || utf8.Valid(m.ID) {
			if !utf8.Valid(got) || !json.Valid(got) {
				t.Errorf("validFrame(%q) = %q: not valid UTF-8 JSON", tt.in, got)
			}
		}
	}
	valid := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")
	if got := validFrame(valid); &got[0] != &valid[0] {
		t.Errorf("a valid frame was copied")
	}
}

// TestRelayGuardFramesValidUTF8: a frame acp-guard writes (a reply built
// from the agent's text) reaches the client as valid UTF-8; the agent's
// own frames pass as they came.
func TestRelayGuardFramesValidUTF8(t *testing.T) {
	r, out := newTestRelay(nil)
	r.FromClient(line(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}` + "\n"))
	r.Reply(r.PendingClient()[0], []byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"message\":\"bad \xff\"}}\n"))
	r.FromAgent(line("{\"jsonrpc\":\"2.0\",\"method\":\"x/own\",\"params\":{\"t\":\"\xff\"}}\n"))
	if len(out.client) != 2 || !utf8.ValidString(out.client[0]) || utf8.ValidString(out.client[1]) {
		t.Errorf("client got %q; want the reply made valid and the agent's frame unchanged", out.client)
	}
}
