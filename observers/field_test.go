package observers

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/classify"
)

// bound returns DefaultSignatures bound to the embedded catalogue, as the
// guard binds them.
func bound(t testing.TB) []ControlSignature {
	t.Helper()
	e := catalogue.Default()
	sigs, missing := Bind(DefaultSignatures, func(rule string) (ChunkRule, error) {
		cc, err := e.ControlChunk(rule)
		return ChunkRule{Adapter: cc.Adapter, Prefix: cc.Prefix, Match: cc.Match}, err
	}, func(adapter, text string) bool {
		_, _, ok := e.ReportedFailure(classify.Evidence{Adapter: adapter, Message: text})
		return ok
	})
	if len(missing) > 0 {
		t.Fatalf("Bind: %v", missing)
	}
	return sigs
}

// The observer and the catalogue agree on every control-chunk text: one
// definition (issue 12: "[deadline_exceeded]" was rewritten by the
// observer but vetoed by the catalogue, "retry limit reached" the other
// way round).
func TestCursorSignatureIsTheCatalogueRule(t *testing.T) {
	sig := bound(t)[0]
	e := catalogue.Default()
	for _, text := range []string{
		"Error: RetriableError: [deadline_exceeded] stream timed out",
		"Error: RetriableError: retry limit reached",
		"Error: RetriableError: context deadline exceeded",
		"Error: RetriableError: context_canceled",
		"Error: RetriableError: [canceled] stream reset",
		"Error: RetriableError: [unavailable] PING timed out",
		"Error: RetriableError: max retries reached",
		"Error: RetriableError: retries exhausted", // not a veto phrase: matches
	} {
		obs := sig.Match(AdapterCursor, text, true)
		v := e.Classify(classify.Evidence{Source: classify.SourceMessageChunk, Adapter: AdapterCursor, Message: text})
		cat := v.Rule == sig.Rule
		if obs != cat {
			t.Errorf("%q: observer match %v, catalogue rule %q (match %v)", text, obs, v.Rule, cat)
		}
	}
	for _, text := range []string{"Error: RetriableError: [deadline_exceeded] x", "Error: RetriableError: retry limit reached"} {
		if sig.Match(AdapterCursor, text, true) {
			t.Errorf("%q: want vetoed", text)
		}
	}
}

func TestUnboundSignatureNeverMatches(t *testing.T) {
	sig := CursorRetriable
	if sig.Match(AdapterCursor, "Error: RetriableError: [unavailable] PING timed out", true) {
		t.Errorf("an unbound signature matched")
	}
	sigs, missing := Bind(DefaultSignatures, func(string) (ChunkRule, error) { return ChunkRule{}, classify.ErrUnknownRule }, nil)
	if len(missing) != 1 { // Cursor's rule; Copilot's error line needs no rule
		t.Errorf("Bind: got %d missing, want 1", len(missing))
	}
	for _, s := range sigs {
		if s.Match(s.Adapter, "Error: RetriableError: [unavailable] PING timed out", true) || s.Match(s.Adapter, "Error: 503 Service Unavailable", true) {
			t.Errorf("%s: matched unbound", s.Name)
		}
	}
}

// contentChunk builds a message chunk with an arbitrary content block.
func contentChunk(session string, content map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"sessionId": session, "update": map[string]any{
		"sessionUpdate": "agent_message_chunk", "content": content}})
	return b
}

func TestOutputPerSpec(t *testing.T) {
	const s = "sess-1"
	ctrl := chunk(s, "agent_message_chunk", "Error: RetriableError: [unavailable] PING timed out")
	image := contentChunk(s, map[string]any{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="})
	for _, tt := range []struct {
		name       string
		steps      [][]byte
		wantOutput bool
		wantMarker bool
	}{
		{"image chunk is output", [][]byte{image}, true, false},
		{"image chunk after the control chunk clears the marker", [][]byte{ctrl, image}, true, false},
		{"audio chunk is output", [][]byte{contentChunk(s, map[string]any{"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="})}, true, false},
		{"resource_link chunk is output", [][]byte{contentChunk(s, map[string]any{"type": "resource_link", "uri": "file:///a", "name": "a"})}, true, false},
		{"resource chunk is output", [][]byte{contentChunk(s, map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///a", "text": "x"}})}, true, false},
		{"text typed after its text (sorted keys) is judged by its text", [][]byte{contentChunk(s, map[string]any{"text": "hello", "type": "text"})}, true, false},
		{"NBSP-only chunk is not output", [][]byte{chunk(s, "agent_message_chunk", "\u00a0\u2003\u3000")}, false, false},
		{"NBSP-only chunk does not clear the marker", [][]byte{ctrl, chunk(s, "agent_message_chunk", "\u00a0")}, false, true},
		{"escaped unicode blank does not clear the marker", [][]byte{ctrl, []byte(`{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\u2028\u00a0"}}}`)}, false, true},
		{"NBSP-only thought does not clear the marker", [][]byte{ctrl, chunk(s, "agent_thought_chunk", "\u00a0\n")}, false, true},
		{"non-ASCII text is output", [][]byte{ctrl, chunk(s, "agent_message_chunk", "\u00a0é")}, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(AdapterCursor, bound(t))
			turn := tr.Start(s, time.Time{})
			for _, p := range tt.steps {
				if _, ok := tr.ObserveParams(p); !ok {
					t.Fatalf("ObserveParams(%s): not a session/update", p)
				}
			}
			turn.SettleErrorLine(false) // at prompt return: no failure report in the text
			if turn.Evidence.AssistantOutput != tt.wantOutput || (turn.Marker != nil) != tt.wantMarker {
				t.Errorf("output %v marker %v, want output %v marker %v", turn.Evidence.AssistantOutput, turn.Marker != nil, tt.wantOutput, tt.wantMarker)
			}
		})
	}
}

func TestTextBlank(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want bool
	}{
		{`""`, true}, {`" \n\t"`, true}, {`"\u00a0"`, true}, {"\"\u00a0\u2003\"", true}, {`"\u2028 "`, true},
		{`"x"`, false}, {`" \u00e9"`, false}, {"\"\u00a0x\"", false}, {`"\""`, false},
	} {
		if got := TextBlank([]byte(tt.raw)); got != tt.want {
			t.Errorf("TextBlank(%s) = %v, want %v", tt.raw, got, tt.want)
		}
	}
}

// Copilot CLI 1.0.102's failure turn, as captured
// (testdata/transcripts/real/copilot/server_error_500.jsonl): retry notes,
// then one "Error: …" chunk, then end_turn.
func TestCopilotProjection(t *testing.T) {
	const s = "sess-1"
	info := chunk(s, "agent_message_chunk", "Info: Request failed due to a transient API error. Retrying...")
	fail := chunk(s, "agent_message_chunk", "Error: Failed to get response from the AI model; retried 5 times (total retry wait time: 12.91 seconds) Last error: 500 The server had an error while processing your request. Sorry about that!")
	prose := chunk(s, "agent_message_chunk", "Error: handling in main.go is missing, so I added it.")
	for _, tt := range []struct {
		name         string
		adapter      string
		steps        []step
		wantMarker   bool
		wantOutput   bool
		wantDiagnose int
	}{
		{"notes then the error: notes forwarded, error suppressed", AdapterCopilot, []step{{info, false}, {info, false}, {fail, true}}, true, false, 2},
		{"a note after the error keeps the marker", AdapterCopilot, []step{{fail, true}, {info, false}}, true, false, 1},
		{"text after the error clears it (the agent resumed)", AdapterCopilot, []step{{fail, true}, {chunk(s, "agent_message_chunk", "Here is the answer"), false}}, false, true, 0},
		{"an Error: sentence of prose is not suppressed (the guard decides on it at prompt return)", AdapterCopilot, []step{{prose, false}}, false, false, 0},
		{"another adapter: the note is a diagnostic, the error line is left to the guard", AdapterCodex, []step{{info, false}, {fail, false}}, false, false, 1},
		{"another adapter: text before the error line makes it output", AdapterCodex, []step{{chunk(s, "agent_message_chunk", "Here is the answer"), false}, {fail, false}}, false, true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(tt.adapter, bound(t))
			turn := tr.Start(s, time.Time{})
			for i, st := range tt.steps {
				if got := observe(t, tr, st.params); got != st.wantSuppress {
					t.Errorf("step %d: suppress %v, want %v", i, got, st.wantSuppress)
				}
			}
			if (turn.Marker != nil) != tt.wantMarker || turn.Evidence.AssistantOutput != tt.wantOutput || turn.Evidence.Diagnostics != tt.wantDiagnose {
				t.Errorf("marker %v output %v diagnostics %d, want %v %v %d", turn.Marker != nil, turn.Evidence.AssistantOutput, turn.Evidence.Diagnostics, tt.wantMarker, tt.wantOutput, tt.wantDiagnose)
			}
			if tt.wantMarker {
				e := catalogue.Default()
				v := e.ClassifyText(classify.Evidence{Adapter: tt.adapter, Message: turn.Marker.EvidenceText(turn.MarkerText)})
				if v.Code != classify.CodeProviderUnavailable || v.Rule != "copilot.error_server.v1" {
					t.Errorf("verdict of the marker's text: %s by %q, want provider_unavailable by copilot.error_server.v1", v.Code, v.Rule)
				}
			}
		})
	}
}
