package acptest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
)

// Frame is one JSON-RPC message as the client received it.
type Frame struct {
	Raw    []byte // the line exactly as read, terminator included
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// Parse decodes one line. The line is kept in Raw (copied); a line that is
// not a JSON object is an error.
func Parse(line []byte) (Frame, error) {
	var w struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *Error          `json:"error"`
	}
	f := Frame{Raw: append([]byte(nil), line...)}
	if err := json.Unmarshal(line, &w); err != nil {
		return f, err
	}
	f.ID, f.Method, f.Params, f.Result, f.Error = w.ID, w.Method, w.Params, w.Result, w.Error
	return f, nil
}

// IsResponse reports whether the frame answers a request.
func (f Frame) IsResponse() bool { return f.Method == "" && f.ID != nil }

// IsRequest reports whether the frame is a request (it expects an answer).
func (f Frame) IsRequest() bool { return f.Method != "" && f.ID != nil }

// Answers reports whether the frame is the response to id (its JSON text).
func (f Frame) Answers(id string) bool { return f.IsResponse() && string(f.ID) == id }

// Line is the frame without its line terminator.
func (f Frame) Line() []byte { return bytes.TrimRight(f.Raw, "\r\n") }

// ResponsesByID groups the responses among frames by id.
func ResponsesByID(frames []Frame) map[string][]Frame {
	by := map[string][]Frame{}
	for _, f := range frames {
		if f.IsResponse() {
			by[string(f.ID)] = append(by[string(f.ID)], f)
		}
	}
	return by
}

// ResponsesTo returns the responses to id among frames.
func ResponsesTo(frames []Frame, id string) []Frame { return ResponsesByID(frames)[id] }

// Client frames, each one line with its "\n".

// Request is a request with id (any JSON-encodable value) and params (JSON
// text; "" is {}).
func Request(id any, method, params string) string {
	idb, err := json.Marshal(id)
	if err != nil {
		panic(err)
	}
	if params == "" {
		params = "{}"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`+"\n", idb, method, params)
}

// Notification is a notification with params (JSON text; "" is {}).
func Notification(method, params string) string {
	if params == "" {
		params = "{}"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s}`+"\n", method, params)
}

// Result is a success response to the raw JSON id with result (JSON text).
func Result(id json.RawMessage, result string) string {
	return `{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + "}\n"
}

// Initialize is an initialize request advertising no capability.
func Initialize(id any) string {
	return Request(id, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
}

// InitializeAll is an initialize request advertising file system and
// terminal support.
func InitializeAll(id any) string {
	return Request(id, "initialize", `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}}`)
}

// SessionNew is a session/new request in /tmp without MCP servers.
func SessionNew(id any) string {
	return Request(id, "session/new", `{"cwd":"/tmp","mcpServers":[]}`)
}

// Prompt is a session/prompt request with one text block, "hi".
func Prompt(id any, session string) string {
	return Request(id, "session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"hi"}]}`, session))
}

// Cancel is a session/cancel notification.
func Cancel(session string) string {
	return Notification("session/cancel", fmt.Sprintf(`{"sessionId":%q}`, session))
}

// Echo asks the demo agent to write payload to its stdout verbatim
// (test/echo).
func Echo(payload []byte) string {
	return Notification("test/echo", `{"payload":"`+base64.StdEncoding.EncodeToString(payload)+`"}`)
}

// SessionID returns the sessionId of a session/new result.
func SessionID(f Frame) (string, error) {
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if f.Error != nil || json.Unmarshal(f.Result, &r) != nil || r.SessionID == "" {
		return "", fmt.Errorf("session/new answered %s", f.Raw)
	}
	return r.SessionID, nil
}

// EqualFrames compares two runs' frames (as text, already normalized) and
// reports each difference on t: what names the comparison, and the two
// runs.
func EqualFrames(t testing.TB, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d frames, want %d:\ngot  %q\nwant %q", what, len(got), len(want), got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: frame %d:\ngot  %s\nwant %s", what, i, got[i], want[i])
		}
	}
}
