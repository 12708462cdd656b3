package transport_test

// The hostile agent of the randomized fault test (fault_test.go): this
// test binary, run as `transport.test fault-agent PLAN LOG` (TestMain
// hands it over before the tests start). It speaks enough ACP to get a
// session going and then does, for each prompt attempt, what the plan
// says: output, failures, answers twice or to ids nobody sent, late
// output, lines over the cap, frames cut off, exits, a SIGKILL of its
// own. It logs every line it reads ("R ") and writes ("W ", "C " for a
// frame it cut off) to LOG before acting on it, so the test knows exactly
// what the agent wrote and received.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// faultPlan is what the agent does (fault_test.go draws it).
type faultPlan struct {
	IgnoreEOF  bool `json:"ignoreEOF,omitempty"`  // stays after its stdin ended
	IgnoreTerm bool `json:"ignoreTerm,omitempty"` // ignores SIGTERM
	InitTwice  bool `json:"initTwice,omitempty"`  // answers initialize twice
	InitStray  bool `json:"initStray,omitempty"`  // and answers an id never sent
	// Prompts[i][a] are the actions for attempt a of the client's prompt
	// i (recognized by its text "p<i>", which a retry repeats); a missing
	// entry is ["result"].
	Prompts [][][]string `json:"prompts"`
}

// Agent actions:
//
//	chunk, thought, tool   a session/update of that kind (output)
//	ask                    session/request_permission, then wait for its answer (or a cancel)
//	result                 end_turn
//	error:transient        an overloaded error (a retry may follow)
//	error:hard             an authentication error (never retried)
//	error:badutf8          an error whose message is not UTF-8
//	dup                    another answer to the prompt
//	stray                  an answer to an id never sent
//	strayproxy             an answer to a proxy id never sent
//	late                   a message chunk (after the answer: late output)
//	garbage                a line that is not JSON
//	hugenote               a notification over the line cap
//	hugeanswer             the prompt's answer, over the line cap
//	stall                  nothing until the client cancels
//	exit:N                 exit N at once
//	cut:N                  half a frame without its newline, then exit N
//	kill                   SIGKILL itself
const faultHuge = 70 << 10 // over the test's --max-line 64 KiB

type faultAgent struct {
	plan     faultPlan
	log      *os.File
	attempts map[int]int
	nextReq  int
	// the prompt being worked on: its id, the actions left, and what it
	// waits for (an answer to waitID, or a cancel)
	id      json.RawMessage
	left    []string
	waitID  string
	waiting bool
}

type faultMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// runFaultAgent is the agent's main.
func runFaultAgent(planPath, logPath string) int {
	a := &faultAgent{attempts: map[int]int{}, nextReq: 1000}
	b, err := os.ReadFile(planPath)
	if err == nil {
		err = json.Unmarshal(b, &a.plan)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fault-agent:", err)
		return 2
	}
	if a.log, err = os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "fault-agent:", err)
		return 2
	}
	if a.plan.IgnoreTerm {
		signal.Ignore(platform.SIGTERM)
	}
	a.note("P", strconv.Itoa(os.Getpid()))
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			a.note("R", strings.TrimRight(string(line), "\r\n"))
			a.handle(line)
		}
		if err != nil {
			if a.plan.IgnoreEOF {
				// Until acp-guard's grace signals end it. Not select{}: with
				// no other goroutine alive the runtime would call that a
				// deadlock and exit 2 (a timer keeps it a sleeping process).
				for {
					time.Sleep(time.Hour)
				}
			}
			return 0
		}
	}
}

func (a *faultAgent) note(kind, s string) { _, _ = a.log.WriteString(kind + " " + s + "\n") }

func (a *faultAgent) write(line string) {
	a.note("W", line)
	_, _ = os.Stdout.WriteString(line + "\n")
}

func (a *faultAgent) update(kind, body string) {
	a.write(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"` + kind + `"` + body + `}}}`)
}

func (a *faultAgent) handle(line []byte) {
	var m faultMsg
	if json.Unmarshal(line, &m) != nil {
		return // not JSON: logged, ignored
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.Method == "initialize":
		res := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"fault-agent","version":"1.0.0"}}}`
		a.write(res)
		if a.plan.InitTwice {
			a.write(res)
		}
		if a.plan.InitStray {
			a.write(`{"jsonrpc":"2.0","id":424242,"result":{}}`)
		}
	case m.Method == "session/new":
		a.write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"sessionId":"s-1"}}`)
	case m.Method == "session/prompt":
		a.prompt(m)
	case m.Method == "session/cancel":
		if a.waiting {
			a.waiting, a.left = false, nil
			a.write(`{"jsonrpc":"2.0","id":` + string(a.id) + `,"result":{"stopReason":"cancelled"}}`)
		}
	case m.Method != "" && hasID:
		a.write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"method not found"}}`)
	case m.Method == "" && hasID:
		if a.waiting && a.waitID != "" && string(m.ID) == a.waitID {
			a.waiting, a.waitID = false, ""
			a.run()
		}
	}
}

func (a *faultAgent) prompt(m faultMsg) {
	var p struct {
		Prompt []struct {
			Text string `json:"text"`
		} `json:"prompt"`
	}
	_ = json.Unmarshal(m.Params, &p)
	i := -1
	if len(p.Prompt) > 0 {
		i, _ = strconv.Atoi(strings.TrimPrefix(p.Prompt[0].Text, "p"))
	}
	n := a.attempts[i]
	a.attempts[i]++
	a.id, a.left, a.waiting, a.waitID = m.ID, []string{"result"}, false, ""
	if i >= 0 && i < len(a.plan.Prompts) && n < len(a.plan.Prompts[i]) {
		a.left = append([]string(nil), a.plan.Prompts[i][n]...)
	}
	a.run()
}

// run does the prompt's actions until one waits or they are done.
func (a *faultAgent) run() {
	id := string(a.id)
	for len(a.left) > 0 {
		act := a.left[0]
		a.left = a.left[1:]
		name, arg, _ := strings.Cut(act, ":")
		code, _ := strconv.Atoi(arg)
		switch name {
		case "chunk", "late":
			a.update("agent_message_chunk", `,"content":{"type":"text","text":"Here is some work."}`)
		case "thought":
			a.update("agent_thought_chunk", `,"content":{"type":"text","text":"Thinking about it."}`)
		case "tool":
			a.update("tool_call", `,"toolCallId":"t1","title":"Read a file","kind":"read","status":"pending"`)
		case "ask":
			a.nextReq++
			a.waitID, a.waiting = strconv.Itoa(a.nextReq), true
			a.write(`{"jsonrpc":"2.0","id":` + a.waitID + `,"method":"session/request_permission","params":{"sessionId":"s-1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"a","name":"Allow","kind":"allow_once"}]}}`)
			return
		case "stall":
			a.waiting = true
			return
		case "result", "dup":
			a.write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"stopReason":"end_turn"}}`)
		case "error":
			msg := map[string]string{
				"transient": `API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}`,
				"hard":      `401 Unauthorized: invalid x-api-key`,
				"badutf8":   "upstream said \xff\xfe then \xc3 and stopped",
			}[arg]
			a.write(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":"` + msg + `"}}`)
		case "stray":
			a.write(`{"jsonrpc":"2.0","id":31337,"result":{"stopReason":"end_turn"}}`)
		case "strayproxy":
			a.write(`{"jsonrpc":"2.0","id":"acp-guard:999","result":{"stopReason":"end_turn"}}`)
		case "garbage":
			a.write("!garbage: this line is not JSON")
		case "hugenote":
			a.update("agent_message_chunk", `,"content":{"type":"text","text":"`+strings.Repeat("x", faultHuge)+`"}`)
		case "hugeanswer":
			a.write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"stopReason":"end_turn","_meta":{"pad":"` + strings.Repeat("x", faultHuge) + `"}}}`)
		case "exit":
			os.Exit(code)
		case "cut":
			cut := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","upd`
			a.note("C", cut)
			_, _ = os.Stdout.WriteString(cut)
			os.Exit(code)
		case "kill":
			_ = platform.Raise(platform.SIGKILL)
			select {}
		}
	}
}
