package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMembersMatchesEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"a":"x\"y","b":[1,2,{"c":null}],"d":{"e":[]}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}`,
		`{"a":"\\\\"}`, `{"a":-1.5e+3,"b":true,"c":false}`, `{"a":[[],[[]],{}]}`,
		// malformed
		`{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `[1,2]`, `{"a":[1,]}`, `{"a":"x}`,
		`{"a":1}x`, `not json {`, ``, `{"a":tru}`, `{"a":{"b":1]}`, `{"a":[1}`, `{1:2}`,
	} {
		err := Members([]byte(in), func(k, v []byte) bool { return true })
		var m map[string]any
		want := json.Unmarshal([]byte(in), &m) == nil
		if got := err == nil; got != want {
			t.Errorf("Members(%q) ok=%v, encoding/json ok=%v", in, got, want)
		}
	}
}

func TestGetAndString(t *testing.T) {
	frame := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Error: \u0052etriable\n\"x\""}}}}`)
	if got, _ := String(Get(frame, "method")); got != "session/update" {
		t.Errorf("method = %q", got)
	}
	if got, _ := String(Get(frame, "params", "update", "sessionUpdate")); got != "agent_message_chunk" {
		t.Errorf("sessionUpdate = %q", got)
	}
	got, complete, ok := StringPrefix(Get(frame, "params", "update", "content", "text"), 300)
	if got != "Error: Retriable\n\"x\"" || !complete || !ok {
		t.Errorf("text = %q complete=%v ok=%v", got, complete, ok)
	}
	if Get(frame, "params", "missing") != nil {
		t.Error("missing key found")
	}
}

func TestStringPrefixBounded(t *testing.T) {
	long := `"` + strings.Repeat("é", 1000) + `"`
	got, complete, _ := StringPrefix([]byte(long), 101)
	if complete || len(got) > 101 || !strings.HasPrefix(strings.Repeat("é", 100), got) || len(got) != 100 {
		t.Errorf("got %d bytes complete=%v", len(got), complete)
	}
	esc := `"` + strings.Repeat(`\u00e9`, 1000) + `"`
	got, complete, _ = StringPrefix([]byte(esc), 101)
	if complete || len(got) != 100 {
		t.Errorf("escaped: got %d bytes complete=%v", len(got), complete)
	}
	short := `"hi"`
	if got, complete, _ := StringPrefix([]byte(short), 10); got != "hi" || !complete {
		t.Errorf("short: %q %v", got, complete)
	}
}

func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":[{"b":"c\\"}]}`, `{`, `{"x":"\u00e9"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Members(b, func(k, v []byte) bool { return true })
		// jsonscan is deliberately lenient about escapes and number forms
		// inside values, but it must never reject a valid object.
		var m map[string]any
		if err != nil && json.Unmarshal(b, &m) == nil {
			t.Fatalf("rejected a valid object: %q", b)
		}
	})
}

func BenchmarkMembersChunk(b *testing.B) {
	frame := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + strings.Repeat("lorem ipsum ", 4) + `"}}}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		_ = Members(frame, func(k, v []byte) bool { return true })
	}
}
