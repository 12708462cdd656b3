package acptest

import "encoding/json"

// Answerer answers an agent→client request: the whole response line, or
// false to leave it unanswered.
type Answerer func(req Frame) (reply string, ok bool)

// Permissive answers as an editor that has a file system and terminals
// and grants what it is asked: fs/read_text_file gets "hello\n",
// terminal/create a terminal id, session/request_permission a cancelled
// outcome, anything else an empty result.
func Permissive(req Frame) (string, bool) {
	result := `{}`
	switch req.Method {
	case "fs/read_text_file":
		result = `{"content":"hello\n"}`
	case "session/request_permission":
		result = `{"outcome":{"outcome":"cancelled"}}`
	case "terminal/create":
		result = `{"terminalId":"term-1"}`
	}
	return Result(req.ID, result), true
}

// Refusing answers as a client without file system or terminal (what the
// interop suite advertises): session/request_permission is rejected once
// (the reject_once option, else cancelled); anything else is
// method-not-found.
func Refusing(req Frame) (string, bool) {
	if req.Method == "session/request_permission" {
		var p struct {
			Options []struct {
				OptionID string `json:"optionId"`
				Kind     string `json:"kind"`
			} `json:"options"`
		}
		_ = json.Unmarshal(req.Params, &p)
		outcome := `{"outcome":"cancelled"}`
		for _, o := range p.Options {
			if o.Kind == "reject_once" {
				id, _ := json.Marshal(o.OptionID)
				outcome = `{"outcome":"selected","optionId":` + string(id) + `}`
				break
			}
		}
		return Result(req.ID, `{"outcome":`+outcome+`}`), true
	}
	msg, _ := json.Marshal("Method not found: " + req.Method)
	return `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32601,"message":` + string(msg) + "}}\n", true
}
