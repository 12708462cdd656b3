package demoagent

import (
	"encoding/json"

	acp "github.com/coder/acp-go-sdk"
)

// JSON-RPC 2.0 error codes the agent uses.
const (
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
)

// inbound is any JSON-RPC message read from stdin.
type inbound struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object. Data is kept raw so that provider
// error shapes are written exactly as built.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

type requestFrame struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

type notificationFrame struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

type resultFrame struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result"`
}

type errorFrame struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *rpcError       `json:"error"`
}

// marshalLine encodes v as one line. The values passed here are built by this
// package and always encode; a failure is a programming error.
func marshalLine(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("demoagent: encoding frame: " + err.Error())
	}
	return append(b, '\n')
}

func resultLine(id json.RawMessage, result any) []byte {
	if result == nil {
		result = struct{}{}
	}
	return marshalLine(resultFrame{JSONRPC: "2.0", ID: id, Result: result})
}

func errorLine(id json.RawMessage, e *rpcError) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return marshalLine(errorFrame{JSONRPC: "2.0", ID: id, Error: e})
}

func notificationLine(method string, params any) []byte {
	return marshalLine(notificationFrame{JSONRPC: "2.0", Method: method, Params: params})
}

func requestLine(id int64, method string, params any) []byte {
	return marshalLine(requestFrame{JSONRPC: "2.0", ID: id, Method: method, Params: params})
}

// sessionNotification is session/update's params. Update is an
// acp.SessionUpdate or a textChunk.
type sessionNotification struct {
	SessionID string `json:"sessionId"`
	Update    any    `json:"update"`
}

// textChunk is an agent_message_chunk or agent_thought_chunk with text
// content, its fields in the order real agents write them (the SDK's
// encoder sorts them).
type textChunk struct {
	SessionUpdate string      `json:"sessionUpdate"`
	Content       textContent `json:"content"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Update kinds the agent writes as textChunk.
const (
	updateMessageChunk = "agent_message_chunk"
	updateThoughtChunk = "agent_thought_chunk"
)

func updateLine(sessionID string, u any) []byte {
	return notificationLine(acp.ClientMethodSessionUpdate, sessionNotification{SessionID: sessionID, Update: u})
}

func textLine(sessionID, kind, text string) []byte {
	return updateLine(sessionID, textChunk{SessionUpdate: kind, Content: textContent{Type: "text", Text: text}})
}

func promptResult(reason acp.StopReason) acp.PromptResponse {
	return acp.PromptResponse{StopReason: reason}
}
