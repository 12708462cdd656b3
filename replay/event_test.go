package replay

import (
	"encoding/json"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestEventMarshalJSON(t *testing.T) {
	for _, tt := range []struct {
		name string
		ev   Event
		want string
	}{
		{
			name: "meta",
			ev:   Event{Dir: DirMeta, Argv: []string{"cursor-agent", "acp"}, Adapter: "cursor-acp", Version: "1.2.3", Catalogue: "2026.1"},
			want: `{"t_ms":0,"dir":"meta","argv":["cursor-agent","acp"],"adapter":"cursor-acp","version":"1.2.3","catalogue":"2026.1"}`,
		},
		{
			name: "frame verbatim",
			ev:   Event{TMs: 12, Dir: DirC2A, Msg: json.RawMessage(`{"id" : 1,"method":"x"}`)},
			want: `{"t_ms":12,"dir":"c2a","msg":{"id" : 1,"method":"x"}}`,
		},
		{
			name: "marked frame",
			ev:   Event{TMs: 3, Dir: DirA2C, Via: ViaGuard, Suppressed: true, CRLF: true, Msg: json.RawMessage(`[]`)},
			want: `{"t_ms":3,"dir":"a2c","via":"guard","suppressed":true,"crlf":true,"msg":[]}`,
		},
		{
			name: "raw frame",
			ev:   Event{TMs: 4, Dir: DirA2C, Raw: ptr("panic: \"x\"\t\x01")},
			want: `{"t_ms":4,"dir":"a2c","raw":"panic: \"x\"\t\u0001"}`,
		},
		{
			name: "padded frame keeps both",
			ev:   Event{TMs: 4, Dir: DirA2C, Raw: ptr(" {} "), Msg: json.RawMessage(`{}`)},
			want: `{"t_ms":4,"dir":"a2c","raw":" {} ","msg":{}}`,
		},
		{
			name: "stderr",
			ev:   StderrEvent(9, "a\\b\x1b[0m\u2028"),
			want: `{"t_ms":9,"dir":"stderr","msg":"a\\b\u001b[0m\u2028"}`,
		},
		{
			name: "exit",
			ev:   Event{TMs: 10, Dir: DirExit, Code: ptr(-1), Signal: "SIGKILL"},
			want: `{"t_ms":10,"dir":"exit","code":-1,"signal":"SIGKILL"}`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.ev.MarshalJSON()
			if err != nil {
				t.Fatalf("MarshalJSON: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			var back Event
			if err := back.UnmarshalJSON(got); err != nil {
				t.Fatalf("UnmarshalJSON(%s): %v", got, err)
			}
			again, _ := back.MarshalJSON()
			if string(again) != tt.want {
				t.Errorf("after a round trip got %s, want %s", again, tt.want)
			}
		})
	}
}

func TestEventMarshalJSONRefusesBadEvents(t *testing.T) {
	for _, tt := range []struct {
		name string
		ev   Event
		want string
	}{
		{"invalid msg", Event{Dir: DirC2A, Msg: json.RawMessage(`{`)}, "not valid JSON"},
		{"padded msg", Event{Dir: DirC2A, Msg: json.RawMessage(` {}`)}, "white space"},
		{"newline in msg", Event{Dir: DirC2A, Msg: json.RawMessage("{\n}")}, "white space"},
		{"no frame", Event{Dir: DirA2C}, `missing "msg" or "raw"`},
		{"unknown dir", Event{Dir: "up"}, `unknown "dir"`},
		{"exit without code", Event{Dir: DirExit}, `missing "code"`},
		{"stderr not a string", Event{Dir: DirStderr, Msg: json.RawMessage(`1`)}, "must be a string"},
		{"negative time", Event{TMs: -1, Dir: DirMeta}, "negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.ev.MarshalJSON()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "\x00\x1f\x7f", "héllo 日本", "<&>", "\u2028\u2029", "bad \xff\xfe utf8", "\xe2\x82"} {
		got := appendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("appendString(%q) = %s: not a JSON string: %v", s, got, err)
		}
		want, _ := json.Marshal(s) // replaces bad UTF-8 with U+FFFD too
		var wantBack string
		json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("appendString(%q) decodes to %q, want %q", s, back, wantBack)
		}
	}
}

func TestEventAccessors(t *testing.T) {
	raw := Event{Dir: DirA2C, Raw: ptr("oops")}
	if got := string(raw.Bytes()); got != "oops" {
		t.Errorf("raw Bytes() = %q, want %q", got, "oops")
	}
	if raw.IsJSON() {
		t.Error("raw IsJSON() = true, want false")
	}
	msg := Event{Dir: DirA2C, Msg: json.RawMessage(`{}`), Via: ViaGuard}
	if got := string(msg.Bytes()); got != "{}" || !msg.IsJSON() || msg.Original() {
		t.Errorf("msg Bytes()=%q IsJSON()=%v Original()=%v, want {} true false", got, msg.IsJSON(), msg.Original())
	}
	if got := StderrEvent(1, "line\tx").Text(); got != "line\tx" {
		t.Errorf("Text() = %q, want %q", got, "line\tx")
	}
	if got := msg.Text(); got != "" {
		t.Errorf("Text() of a frame = %q, want empty", got)
	}
}

func TestExitStatus(t *testing.T) {
	for _, tt := range []struct {
		code   int
		signal string
		want   int
	}{
		{0, "", 0},
		{3, "", 3},
		{-1, "", 1},
		{-1, "SIGKILL", 137},
		{-1, "TERM", 143},
		{-1, "killed", 137},
		{-1, "interrupt", 130},
		{-1, "9", 137},
		{2, "SIGWHAT", 2},
	} {
		if got := exitStatus(tt.code, tt.signal); got != tt.want {
			t.Errorf("exitStatus(%d, %q) = %d, want %d", tt.code, tt.signal, got, tt.want)
		}
	}
}
