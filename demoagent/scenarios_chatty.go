package demoagent

import (
	"encoding/json"
	"time"
)

// A long failing turn with a chatty stderr, as an agent nobody captured
// showed it: while the agent retries the provider on its own, its
// background telemetry and analytics exports fail on a timer, with DNS
// words for their own hosts; then it reports the real failure the usual
// way — a message chunk "Error: <status> {…}" and -32603 "Internal error:
// Agent error" with the same text in data. chatty-cut streams part of an
// answer, is cut, and visibly restarts it (set off by a blank line)
// before it gives up; chatty-close retries until the client closes its
// input and then exits, chatty-hang until acp-guard stops it.

// Texts of the chatty scenarios.
const (
	chattyTelemetry = "[telemetry] OTLPExporterError: export failed: getaddrinfo ENOTFOUND telemetry.demo-agent.invalid"
	chattyAnalytics = "request to https://events.demo-agent.invalid/v1/batch failed, reason: getaddrinfo ENOTFOUND events.demo-agent.invalid (analytics flush)"
	chatty500       = `Error: 500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}`
	chatty429       = `Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`
	chattyCut       = "terminated"
	chattyPartial1  = "Hello from "
	chattyPartial2  = "the fake "
	// DefaultChattyTick is the telemetry timer of the chatty scenarios
	// (--delay overrides it).
	DefaultChattyTick = 20 * time.Millisecond
)

func init() {
	scenarios = append(scenarios,
		&scenario{name: "chatty-500", description: "telemetry export failures on stderr on a timer during silent retries, then \"Error: 500 {…api_error…}\" as a chunk and -32603 \"Internal error: Agent error\" with it in data",
			prompt: chattyScript(chatty500, false)},
		&scenario{name: "chatty-429", description: "as chatty-500, with \"Error: 429 {…rate_limit_error…}\"",
			prompt: chattyScript(chatty429, false)},
		&scenario{name: "chatty-cut", description: "as chatty-500, but streams part of an answer, is cut, restarts it after a blank line, and fails -32603 with data \"terminated\"",
			prompt: chattyScript(chattyCut, true)},
		&scenario{name: "chatty-close", description: "telemetry export failures on stderr on a timer while retrying, until stdin EOF; then exits 1 without answering",
			prompt: promptChattyUntilEOF},
		&scenario{name: "chatty-hang", stayAfterEOF: true, description: "telemetry export failures on stderr on a timer while retrying, never answers, stays after stdin EOF until stopped",
			prompt: promptChattyUntilEOF},
	)
}

// chattyTick writes one round of background noise to stderr (the
// agent's own retries are silent) and waits for the timer; it fails when
// the turn is cancelled.
func (t *turn) chattyTick() error {
	t.a.logRaw(chattyTelemetry)
	t.a.logRaw(chattyAnalytics)
	d := t.a.opts.Delay
	if d <= 0 {
		d = DefaultChattyTick
	}
	return t.sleep(d)
}

func chattyScript(text string, cut bool) func(t *turn) error {
	return func(t *turn) error {
		for i := range 3 {
			if cut && i < 2 {
				// A pass of the answer; the second is set off by a blank line.
				first := chattyPartial1
				if i == 1 {
					first = "\n\n" + first
				}
				if err := t.message(first); err != nil {
					return err
				}
				if err := t.message(chattyPartial2); err != nil {
					return err
				}
				if err := t.a.w.flush(); err != nil {
					return err
				}
			}
			if err := t.chattyTick(); err != nil {
				return err
			}
		}
		if !cut {
			if err := t.message(text); err != nil {
				return err
			}
		}
		data, _ := json.Marshal(map[string]string{"details": text})
		return t.fail(&rpcError{Code: -32603, Message: "Internal error: Agent error", Data: data})
	}
}

// promptChattyUntilEOF retries (noisily) until the client closes its
// input; then the agent exits without answering (chatty-close), or stays
// until stopped (chatty-hang: stayAfterEOF).
func promptChattyUntilEOF(t *turn) error {
	for {
		select {
		case <-t.a.inputClosed:
			if t.a.sc.stayAfterEOF {
				<-t.ctx.Done()
				return t.ctx.Err()
			}
			t.a.logRaw(chattyTelemetry)
			if err := t.a.w.flush(); err != nil {
				return err
			}
			return &ExitError{Code: 1}
		default:
		}
		if err := t.chattyTick(); err != nil {
			return err
		}
	}
}
