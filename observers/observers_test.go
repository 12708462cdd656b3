package observers

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// chunk builds session/update params for a text chunk, fields in the
// order agents write them (the fast path).
func chunk(session, kind, text string) []byte {
	tj, _ := json.Marshal(text)
	sj, _ := json.Marshal(session)
	return []byte(`{"sessionId":` + string(sj) + `,"update":{"sessionUpdate":"` + kind + `","content":{"type":"text","text":` + string(tj) + `}}}`)
}

// sortedChunk builds the same params with keys sorted (encoding/json's
// order: the general path).
func sortedChunk(session, kind, text string) []byte {
	b, _ := json.Marshal(map[string]any{"sessionId": session, "update": map[string]any{
		"sessionUpdate": kind, "content": map[string]any{"type": "text", "text": text}}})
	return b
}

func TestParseUpdateLayoutsAgree(t *testing.T) {
	for _, kind := range []string{"agent_message_chunk", "agent_thought_chunk", "tool_call", "user_message_chunk"} {
		for _, text := range []string{"", " ", "hello", "Error: RetriableError: x", "quote \" inside", "\u00e9"} {
			fast, ok1 := ParseUpdate(chunk("s-1", kind, text))
			slow, ok2 := ParseUpdate(sortedChunk("s-1", kind, text))
			if !ok1 || !ok2 || fast.Kind != slow.Kind || string(fast.SessionRaw) != string(slow.SessionRaw) {
				t.Errorf("%s %q: fast %+v/%v slow %+v/%v", kind, text, fast, ok1, slow, ok2)
			}
			if (fast.TextRaw == nil) != (slow.TextRaw == nil) {
				t.Errorf("%s %q: text found fast=%v slow=%v", kind, text, fast.TextRaw != nil, slow.TextRaw != nil)
			}
			if fast.TextRaw != nil && TextBlank(fast.TextRaw) != TextBlank(slow.TextRaw) {
				t.Errorf("%s %q: blank fast=%v slow=%v", kind, text, TextBlank(fast.TextRaw), TextBlank(slow.TextRaw))
			}
		}
	}
	// An escaped session id takes the general path and still resolves.
	u, ok := ParseUpdate([]byte(`{"sessionId":"a\u0062","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}`))
	if !ok || u.Kind != UpdateMessage {
		t.Errorf("escaped id: %+v %v", u, ok)
	}
}

func toolCall(session, kind string) []byte {
	b, _ := json.Marshal(map[string]any{"sessionId": session, "update": map[string]any{
		"sessionUpdate": kind, "toolCallId": "t1", "title": "Read File", "status": "in_progress"}})
	return b
}

func observe(t *testing.T, tr *Tracker, params []byte) bool {
	t.Helper()
	u, ok := ParseUpdate(params)
	if !ok {
		t.Fatalf("ParseUpdate(%s) failed", params)
	}
	return tr.Observe(u)
}

func TestCursorMatch(t *testing.T) {
	sig := bound(t)[0]
	for _, tt := range []struct {
		name    string
		adapter string
		text    string
		want    bool
	}{
		{"ping timeout", AdapterCursor, "Error: RetriableError: [unavailable] PING timed out", true},
		{"connection stalled", AdapterCursor, "Error: RetriableError: Connection stalled", true},
		{"http2 reset", AdapterCursor, "Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)", true},
		{"case-insensitive prefix", AdapterCursor, "error: retriableerror: upstream reset", true},
		{"surrounding whitespace", AdapterCursor, "\n\t  Error: RetriableError: x  \n", true},
		{"unicode whitespace trim", AdapterCursor, "\u00a0Error: RetriableError:\u2003stalled\u3000", true},
		{"cursor's own [canceled] label does not veto", AdapterCursor, "Error: RetriableError: [canceled] stream reset", true},
		{"suffix exactly 256 bytes", AdapterCursor, "Error: RetriableError: " + strings.Repeat("x", 256), true},
		{"suffix 257 bytes", AdapterCursor, "Error: RetriableError: " + strings.Repeat("x", 257), false},
		{"empty suffix", AdapterCursor, "Error: RetriableError:", false},
		{"blank suffix", AdapterCursor, "Error: RetriableError:   \u2003 ", false},
		{"prose before the prefix", AdapterCursor, "I saw Error: RetriableError: PING timed out", false},
		{"context canceled veto", AdapterCursor, "Error: RetriableError: context canceled", false},
		{"deadline veto", AdapterCursor, "Error: RetriableError: context deadline exceeded", false},
		{"retry escalation veto", AdapterCursor, "Error: RetriableError: escalating after retries", false},
		{"retry limit veto", AdapterCursor, "Error: RetriableError: exceeded retry limit", false},
		{"other adapter", AdapterCodex, "Error: RetriableError: [unavailable] PING timed out", false},
		{"no adapter", "", "Error: RetriableError: [unavailable] PING timed out", false},
		{"different error", AdapterCursor, "Error: FatalError: nope", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := sig.Match(tt.adapter, tt.text, true); got != tt.want {
				t.Errorf("Match(%q, %q) = %v, want %v", tt.adapter, tt.text, got, tt.want)
			}
		})
	}
}

// step is one frame of a turn scenario.
type step struct {
	params       []byte
	wantSuppress bool
}

func TestCursorProjectionTurns(t *testing.T) {
	const s = "sess-1"
	ctrl := chunk(s, "agent_message_chunk", "Error: RetriableError: [unavailable] PING timed out")
	for _, tt := range []struct {
		name       string
		adapter    string
		steps      []step
		wantMarker bool
		wantSafe   bool
	}{
		{"control chunk alone", AdapterCursor, []step{{ctrl, true}}, true, true},
		{"observed incident: thought and Read File in flight, then control chunk", AdapterCursor, []step{
			{chunk(s, "agent_thought_chunk", "Let me read the file"), false},
			{toolCall(s, "tool_call"), false},
			{ctrl, true},
		}, true, false},
		{"later assistant text clears (Cursor resumed)", AdapterCursor, []step{{ctrl, true}, {chunk(s, "agent_message_chunk", "Here is the answer"), false}}, false, false},
		{"later thought clears", AdapterCursor, []step{{ctrl, true}, {chunk(s, "agent_thought_chunk", "retrying"), false}}, false, false},
		{"new tool call clears", AdapterCursor, []step{{ctrl, true}, {toolCall(s, "tool_call"), false}}, false, false},
		{"in-flight tool update does not clear", AdapterCursor, []step{{toolCall(s, "tool_call"), false}, {ctrl, true}, {toolCall(s, "tool_call_update"), false}}, true, false},
		{"a later match sets it again", AdapterCursor, []step{{ctrl, true}, {chunk(s, "agent_message_chunk", "resumed"), false}, {ctrl, true}}, true, false},
		{"blank chunk neither clears nor counts", AdapterCursor, []step{{ctrl, true}, {chunk(s, "agent_message_chunk", " \n"), false}}, true, true},
		{"other adapter: forwarded and counted as output", AdapterCodex, []step{{ctrl, false}}, false, false},
		{"other session's update does not touch this turn", AdapterCursor, []step{{chunk("other", "agent_message_chunk", "hello"), false}, {ctrl, true}}, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(tt.adapter, bound(t))
			tr.Start("other", time.Time{}) // another session with its own turn
			turn := tr.Start(s, time.Time{})
			for i, st := range tt.steps {
				if got := observe(t, tr, st.params); got != st.wantSuppress {
					t.Errorf("step %d: suppress = %v, want %v", i, got, st.wantSuppress)
				}
			}
			if got := turn.Marker != nil; got != tt.wantMarker {
				t.Errorf("marker pending = %v, want %v", got, tt.wantMarker)
			}
			turn.SettleErrorLine(false) // at prompt return: no failure report in the text
			if got := turn.ReplaySafe(); got != tt.wantSafe {
				t.Errorf("ReplaySafe = %v, want %v (evidence %+v)", got, tt.wantSafe, turn.Evidence)
			}
		})
	}
}

func TestStaleAndInactive(t *testing.T) {
	ctrl := chunk("s", "agent_message_chunk", "Error: RetriableError: x")
	tr := NewTracker(AdapterCursor, bound(t))
	// No prompt yet: generation 0, nothing matches.
	if observe(t, tr, ctrl) {
		t.Error("matched with no active turn")
	}
	first := tr.Start("s", time.Time{})
	second := tr.Start("s", time.Time{})
	if tr.Current(first) || !tr.Current(second) {
		t.Errorf("Current(first)=%v Current(second)=%v", tr.Current(first), tr.Current(second))
	}
	if !observe(t, tr, ctrl) || first.Marker != nil || second.Marker == nil {
		t.Error("the match must land on the active generation only")
	}
	// After the prompt returned, late chunks are forwarded, never suppressed.
	tr.Return(second, "end_turn")
	if observe(t, tr, ctrl) {
		t.Error("suppressed a chunk after the prompt returned")
	}
}

func TestEvidenceGate(t *testing.T) {
	for _, tt := range []struct {
		name string
		do   func(tr *Tracker)
		safe bool
	}{
		{"nothing happened", func(tr *Tracker) {}, true},
		{"write effect", func(tr *Tracker) { tr.Effect("s", "fs/write_text_file") }, false},
		{"terminal effect", func(tr *Tracker) { tr.Effect("s", "terminal/create") }, false},
		{"permission request", func(tr *Tracker) { tr.Effect("s", "session/request_permission") }, false},
		{"read is not an effect", func(tr *Tracker) { tr.Effect("s", "fs/read_text_file") }, true},
		{"unparseable line", func(tr *Tracker) { tr.Unparseable() }, false},
		{"cancel", func(tr *Tracker) { tr.Cancel("s") }, false},
		{"agent exit", func(tr *Tracker) { tr.Exit() }, false},
		{"stderr alone", func(tr *Tracker) { tr.Stderr("warning: slow", time.Time{}) }, true},
		{"plan", func(tr *Tracker) {
			observe(t, tr, []byte(`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}`))
		}, false},
		{"available commands are not output", func(tr *Tracker) {
			observe(t, tr, []byte(`{"sessionId":"s","update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}`))
		}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(AdapterCursor, bound(t))
			turn := tr.Start("s", time.Time{})
			tt.do(tr)
			if got := turn.ReplaySafe(); got != tt.safe {
				t.Errorf("ReplaySafe = %v, want %v (%+v)", got, tt.safe, turn.Evidence)
			}
		})
	}
}

func TestStderrBounded(t *testing.T) {
	tr := NewTracker("", nil)
	turn := tr.Start("s", time.Time{})
	for i := 0; i < 1000; i++ {
		tr.Stderr(strings.Repeat("x", 10), time.Time{})
	}
	if got := len(turn.Stderr()); got != maxTurnStderr {
		t.Errorf("kept %d stderr lines, want %d", got, maxTurnStderr)
	}
}

func TestIdentityOrder(t *testing.T) {
	for _, tt := range []struct {
		id         Identity
		want, from string
	}{
		{Identity{Flag: "cursor-acp", AgentInfo: "codex-acp", Command: "/usr/bin/gemini"}, AdapterCursor, "flag"},
		{Identity{Meta: "codex-acp", AgentInfo: "gemini-cli"}, AdapterCodex, "meta"},
		{Identity{AgentInfo: "@zed-industries/claude-agent-acp", Command: "node"}, AdapterClaude, "agentInfo"},
		{Identity{Command: "/home/u/.local/bin/cursor-agent"}, AdapterCursor, "command"},
		{Identity{Command: "npx"}, "npx", "command"},
	} {
		got, from := tt.id.Resolve()
		if got != tt.want || from != tt.from {
			t.Errorf("%+v: got %q from %s, want %q from %s", tt.id, got, from, tt.want, tt.from)
		}
	}
}

func BenchmarkObserveNonMatchingChunk(b *testing.B) {
	tr := NewTracker(AdapterCursor, bound(b))
	tr.Start("sess-1", time.Time{})
	// Field order as agents write it: the kind before the content.
	params := []byte(`{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Here is some ordinary assistant text for the user."}}}`)
	b.ReportAllocs()
	for b.Loop() {
		u, _ := ParseUpdate(params)
		tr.Observe(u)
	}
}

// BenchmarkObserveSortedKeys64KiB takes the general path (content before
// the kind) on a 64 KiB chunk.
func BenchmarkObserveSortedKeys64KiB(b *testing.B) {
	tr := NewTracker(AdapterCodex, bound(b))
	tr.Start("sess-1", time.Time{})
	params := sortedChunk("sess-1", "agent_message_chunk", strings.Repeat("lorem ipsum ", 64<<10/12))
	b.ReportAllocs()
	b.SetBytes(int64(len(params)))
	for b.Loop() {
		u, _ := ParseUpdate(params)
		tr.Observe(u)
	}
}

// TestObserveParamsCacheAgrees feeds one stream of updates through the
// cached path and through ParseUpdate+Observe: every verdict and the final
// evidence must agree.
func TestObserveParamsCacheAgrees(t *testing.T) {
	frames := [][]byte{
		chunk("s1", "agent_message_chunk", "hello"),
		chunk("s1", "agent_message_chunk", "Error: RetriableError: x"),
		chunk("s1", "agent_message_chunk", "Error: RetriableError: y"),
		chunk("s1", "agent_thought_chunk", "hmm"),
		chunk("s1", "agent_message_chunk", " "),
		toolCall("s1", "tool_call"),
		[]byte(`{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t2"}}`),
		[]byte(`{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t2"}}`),
		chunk("s2", "agent_message_chunk", "Error: RetriableError: other session"),
		chunk("s1", "agent_message_chunk", "Error: RetriableError: z"),
		sortedChunk("s1", "agent_message_chunk", "sorted layout"),
		chunk("s1", "agent_message_chunk", "Error: RetriableError: again"),
	}
	cached := NewTracker(AdapterCursor, bound(t))
	plain := NewTracker(AdapterCursor, bound(t))
	var turns [2][2]*Turn
	for i, tr := range []*Tracker{cached, plain} {
		turns[i] = [2]*Turn{tr.Start("s1", time.Time{}), tr.Start("s2", time.Time{})}
	}
	for i, f := range frames {
		got, ok := cached.ObserveParams(f)
		u, _ := ParseUpdate(f)
		want := plain.Observe(u)
		if !ok || got != want {
			t.Errorf("frame %d (%s): cached suppress=%v ok=%v, plain %v", i, f, got, ok, want)
		}
	}
	if len(cached.cache.prefix) == 0 {
		t.Error("the agents' usual layout left nothing cached")
	}
	for s := range 2 {
		if a, b := turns[0][s], turns[1][s]; a.Evidence != b.Evidence || (a.Marker == nil) != (b.Marker == nil) {
			t.Errorf("session %d: cached %+v/%v, plain %+v/%v", s, a.Evidence, a.Marker != nil, b.Evidence, b.Marker != nil)
		}
	}
}

// TestFramesOfInterleavedSessionsReachTheirTurns: the tracker remembers the
// session it found last; frames that alternate between sessions, and a
// session's new turn, must still land on the right turn.
func TestFramesOfInterleavedSessionsReachTheirTurns(t *testing.T) {
	tr := NewTracker(AdapterCursor, bound(t))
	a, b := tr.Start("s1", time.Time{}), tr.Start("s2", time.Time{})
	for _, s := range []string{"s1", "s1", "s2", "s1", "s2", "s2", "s3"} {
		u, _ := ParseUpdate(chunk(s, "agent_message_chunk", "x"))
		tr.Observe(u)
	}
	if a.Frames != 3 || b.Frames != 3 {
		t.Fatalf("frames s1=%d s2=%d, want 3 and 3", a.Frames, b.Frames)
	}
	a2 := tr.Start("s1", time.Time{}) // a new turn of the session found last
	u, _ := ParseUpdate(chunk("s1", "agent_message_chunk", "y"))
	tr.Observe(u)
	if a2.Frames != 1 || a.Frames != 3 {
		t.Fatalf("after a new turn: new %d, old %d frames, want 1 and 3", a2.Frames, a.Frames)
	}
}
