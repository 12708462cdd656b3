package observers

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// FuzzSessionUpdateParsersAgree: the session/update parsers agree on every
// input — the fast path (agents' usual layout) with the general walk, both
// with encoding/json's reading of the same params (for objects without
// duplicate keys, where JSON has one meaning), and the tracker's cached
// path with a cold tracker.
func FuzzSessionUpdateParsersAgree(f *testing.F) {
	for _, kind := range []string{"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan", "user_message_chunk"} {
		f.Add(chunk("s-1", kind, "hello"))
		f.Add(sortedChunk("s-1", kind, "Error: RetriableError: x"))
	}
	f.Add([]byte(`{"sessionId":"a\u0062","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":" \n"}}}`))
	f.Add([]byte(`{"update":{"content":{"text":"t","type":"text"},"sessionUpdate":"agent_thought_chunk"},"sessionId":"s"}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1"}}`))
	f.Fuzz(func(t *testing.T, params []byte) {
		got, ok := ParseUpdate(params)
		if fast, fok := parseUpdateFast(params); fok {
			gen, gok := parseUpdateGeneral(params)
			if !gok || !sameUpdate(fast, gen) {
				t.Fatalf("fast %+v, general %+v/%v", show(fast), show(gen), gok)
			}
		}
		if ref, rok := reference(params); rok {
			if !ok || !agrees(got, ref) {
				t.Fatalf("ParseUpdate %+v/%v, encoding/json %+v", show(got), ok, ref)
			}
		}
		checkCache(t, params)
	})
}

func sameUpdate(a, b SessionUpdate) bool {
	return bytes.Equal(a.SessionRaw, b.SessionRaw) && a.Kind == b.Kind && (a.TextRaw == nil) == (b.TextRaw == nil) &&
		(a.TextRaw == nil || TextBlank(a.TextRaw) == TextBlank(b.TextRaw))
}

func show(u SessionUpdate) map[string]any {
	return map[string]any{"session": string(u.SessionRaw), "kind": u.Kind, "text": string(u.TextRaw)}
}

// refUpdate is encoding/json's reading of session/update params, through
// the SDK's session id type.
type refUpdate struct {
	session string
	kind    UpdateKind
	text    *string // update.content.text of a chunk, when a string
}

// reference decodes params with encoding/json; ok is false when the
// params are not an object with a string sessionId and an update object
// holding a string sessionUpdate, or when a key repeats (JSON leaves that
// undefined; the scanner takes the first, encoding/json the last).
func reference(params []byte) (refUpdate, bool) {
	// Maps, not structs: encoding/json matches struct fields ignoring case.
	var top, update map[string]json.RawMessage
	var sid acp.SessionId
	var kind string
	if !uniqueKeys(params) || json.Unmarshal(params, &top) != nil || json.Unmarshal(top["sessionId"], &sid) != nil ||
		json.Unmarshal(top["update"], &update) != nil || update == nil || json.Unmarshal(update["sessionUpdate"], &kind) != nil {
		return refUpdate{}, false
	}
	r := refUpdate{session: string(sid), kind: KindOf(kind)}
	if content := update["content"]; (r.kind == UpdateMessage || r.kind == UpdateThought) && content != nil {
		var c map[string]json.RawMessage
		if !uniqueKeys(content) || json.Unmarshal(content, &c) != nil {
			return refUpdate{}, false
		}
		var text string
		if json.Unmarshal(c["text"], &text) == nil {
			r.text = &text
		}
	}
	return r, true
}

func agrees(u SessionUpdate, r refUpdate) bool {
	var sid string
	if json.Unmarshal(u.SessionRaw, &sid) != nil || sid != r.session || u.Kind != r.kind {
		return false
	}
	if u.Kind != UpdateMessage && u.Kind != UpdateThought {
		return true
	}
	if (u.TextRaw != nil) != (r.text != nil) {
		return false
	}
	return r.text == nil || TextBlank(u.TextRaw) == (bytes.TrimLeft([]byte(*r.text), " \t\r\n") == nil || len(bytes.TrimLeft([]byte(*r.text), " \t\r\n")) == 0)
}

// uniqueKeys reports whether every object in raw has distinct keys (true
// for anything that is not JSON: the reference then refuses it).
func uniqueKeys(raw []byte) bool {
	if raw == nil {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	type level struct {
		obj  bool
		keys map[string]bool
		key  bool // the next token of an object is a key
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		var top *level
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		if top != nil && top.obj && top.key {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return false
				}
				top.keys[k] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{obj: true, keys: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &level{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].key = true
		}
	}
}

// checkCache: a tracker whose cache was primed by the agents' usual layout
// reaches the same verdict and evidence on params as a cold one.
func checkCache(t *testing.T, params []byte) {
	warm := NewTracker(AdapterCursor, DefaultSignatures)
	cold := NewTracker(AdapterCursor, DefaultSignatures)
	wt, ct := warm.Start("s-1", time.Time{}), cold.Start("s-1", time.Time{})
	warm.ObserveParams(chunk("s-1", "agent_thought_chunk", "x"))
	cold.ObserveParams(chunk("s-1", "agent_thought_chunk", "x"))
	ws, wok := warm.ObserveParams(params)
	cs, cok := cold.ObserveParams(params)
	if ws != cs || wok != cok || wt.Evidence != ct.Evidence {
		t.Fatalf("warm %v/%v %+v, cold %v/%v %+v", ws, wok, wt.Evidence, cs, cok, ct.Evidence)
	}
}
