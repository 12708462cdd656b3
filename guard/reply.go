package guard

import (
	"bytes"
	"strconv"

	"github.com/acp-guard/acp-guard/internal/jsonscan"
	"github.com/acp-guard/acp-guard/transport"
)

// An agent's answer is parsed once, where it arrives (parseReply): what
// the guard decides (the stop reason, the error's code, message and data
// for the classifier, a refusal of the relay's), what it writes (the spans
// an annotation or a new id goes into) and what it reports (the decoded
// error of a FailureClassified or Answered event) are read from the parsed
// form, which travels with the failure — never from the frame again.

// reply is an agent's answer to a session/prompt (the client's attempt, a
// retry or a compaction), as parsed once. Its spans alias the frame.
type reply struct {
	stopReason string
	result     []byte // the result object (nil for an error)
	meta       []byte // result._meta
	usage      []byte // result.usage
	err        *rpcErrorObject
}

// refused reports whether the answer is the relay's refusal of a request
// of acp-guard's own that never reached the agent, and its reason.
func (r *reply) refused() (string, bool) {
	if r.err == nil || !r.err.refused {
		return "", false
	}
	return r.err.notSent, true
}

// parseReply parses m's result or error: one walk of the object.
func parseReply(m *transport.Msg) reply {
	var r reply
	if m.Error != nil {
		e := decodeRPCError(m.Error)
		r.err = &e
		return r
	}
	r.result = m.Result
	_ = jsonscan.Members(m.Result, func(key, val []byte) bool {
		switch string(key) {
		case "stopReason":
			r.stopReason, _ = jsonscan.String(val)
		case "_meta":
			r.meta = val
		case "usage":
			r.usage = val
		}
		return true
	})
	return r
}

// rpcErrorObject is a JSON-RPC error object as the guard reads it: code
// and message as the JSON-RPC specification types them (a member of the
// wrong type is left out, the others kept), data kept raw for the
// classifier, and the spans an annotation edits.
type rpcErrorObject struct {
	Code    int
	Message string
	Data    []byte // raw data value (nil: none)
	codeOK  bool   // the code is present and an integer
	span    []byte // the error object
	empty   bool   // the object has no members
	// refused: data.acpGuard.notSent, the relay's refusal of a request of
	// acp-guard's own (transport.Relay.Call); notSent is its reason.
	refused bool
	notSent string
}

// decodeRPCError reads an error object in one walk.
func decodeRPCError(raw []byte) rpcErrorObject {
	e := rpcErrorObject{span: raw, empty: true}
	_ = jsonscan.Members(raw, func(key, val []byte) bool {
		e.empty = false
		switch string(key) {
		case "code":
			if n, err := strconv.Atoi(string(val)); err == nil {
				e.Code, e.codeOK = n, true
			}
		case "message":
			e.Message, _ = jsonscan.String(val)
		case "data":
			e.Data = val
		}
		return true
	})
	if len(e.Data) > 0 && e.Data[0] == '{' && bytes.Contains(e.Data, []byte(`"notSent"`)) {
		// Only the relay's own refusals carry it (transport.Relay.Call).
		if ag := jsonscan.Get(e.Data, "acpGuard"); ag != nil && string(jsonscan.Get(ag, "notSent")) == "true" {
			e.refused = true
			e.notSent, _ = jsonscan.String(jsonscan.Get(ag, "reason"))
		}
	}
	return e
}

// rpc is the error as events and reports carry it.
func (e *rpcErrorObject) rpc() *RPCError {
	if e == nil {
		return nil
	}
	return &RPCError{Code: e.Code, Message: e.Message}
}

// cloneMsg copies m's frame, with its spans (and those of e, parsed from
// it) pointing into the copy: the relay reuses m's buffer once the hook
// returns.
func cloneMsg(m *transport.Msg, e *rpcErrorObject) (*transport.Msg, *rpcErrorObject) {
	line := append([]byte(nil), m.Line...)
	at := func(span []byte) []byte {
		if span == nil {
			return nil
		}
		i := offset(m.Line, span)
		return line[i : i+len(span)] // capacity to the end of line: offset works on it
	}
	c := &transport.Msg{Line: line, Kind: m.Kind, Method: m.Method, ID: at(m.ID), Params: at(m.Params), Result: at(m.Result), Error: at(m.Error)}
	if e == nil {
		return c, nil
	}
	ce := *e
	ce.span, ce.Data = at(e.span), at(e.Data)
	return c, &ce
}
