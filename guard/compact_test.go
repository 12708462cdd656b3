package guard

import (
	"encoding/json"
	"testing"

	"github.com/acp-guard/acp-guard/internal/jsonscan"
)

// The compaction mark joins whatever _meta the agent wrote.
func TestWithUpdateMeta(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"no _meta", `{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}`,
			`{"_meta":{"acpGuard":{"compaction":true}},"content":{"text":"x","type":"text"},"sessionUpdate":"agent_message_chunk"}`},
		{"other _meta", `{"sessionId":"s","update":{"_meta":{"x":1},"sessionUpdate":"plan","entries":[]}}`,
			`{"_meta":{"acpGuard":{"compaction":true},"x":1},"entries":[],"sessionUpdate":"plan"}`},
		{"acpGuard _meta", `{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[],"_meta":{"acpGuard":{"y":true}}}}`,
			`{"_meta":{"acpGuard":{"compaction":true,"y":true}},"entries":[],"sessionUpdate":"plan"}`},
	} {
		line := []byte(`{"jsonrpc":"2.0","method":"session/update","params":` + tt.in + "}\n")
		params := jsonscan.Get(line[:len(line)-1], "params")
		out := withUpdateMeta(line, jsonscan.Get(params, "update"))
		var f struct {
			Params struct {
				Update json.RawMessage `json:"update"`
			} `json:"params"`
		}
		if err := json.Unmarshal(out, &f); err != nil {
			t.Fatalf("%s: %s is not JSON: %v", tt.name, out, err)
		}
		var v any
		_ = json.Unmarshal(f.Params.Update, &v)
		got, _ := json.Marshal(v)
		if string(got) != tt.want || out[len(out)-1] != '\n' {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
	marked := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","_meta":{"acpGuard":{"compaction":true}}}}}`)
	if withUpdateMeta(marked, jsonscan.Get(jsonscan.Get(marked, "params"), "update")) != nil {
		t.Errorf("an update marked already is marked again")
	}
}

// The session's latest available_commands_update decides the command.
func TestLearnCommands(t *testing.T) {
	g := New(Config{})
	for _, tt := range []struct{ cmds, want string }{
		{`[{"name":"init","description":""},{"name":"compress","description":""},{"name":"compact","description":""}]`, "compact"},
		{`[{"name":"compress","description":""}]`, "compress"},
		{`[{"name":"review","description":""}]`, ""},
	} {
		g.comp.learnCommands([]byte(`{"sessionId":"s","update":{"sessionUpdate":"available_commands_update","availableCommands":` + tt.cmds + `}}`))
		if got := g.ag.session("s").compactCmd; got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.cmds, got, tt.want)
		}
	}
}
