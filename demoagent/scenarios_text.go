package demoagent

import acp "github.com/coder/acp-go-sdk"

// Text-reported failures and retry notes (issue 20), as agents the
// catalogue has never heard of print them: a turn whose only text is one
// error line, turns of nothing but the agent's own retry notes, a
// transient note followed by a 401, an answer that arrives after end_turn,
// and prose that merely starts like an error line.

// Texts of the scenarios.
const (
	errorLineText   = "Error: 503 Service Unavailable"
	errorLineProse  = "Error: I could not find the file you mentioned. Could you check the path?"
	noteConnection1 = "API Error (getaddrinfo ENOTFOUND api.example.com) · Retrying in 1 seconds… (attempt 1/10)"
	noteConnection2 = "API Error (getaddrinfo ENOTFOUND api.example.com) · Retrying in 2 seconds… (attempt 2/10)"
	noteUnnamed     = "Retrying (attempt 1/2, waiting 2s)..."
	noteTransient   = "Attempt 1 failed with status 503. Retrying with backoff..."
)

func init() {
	scenarios = append(scenarios,
		&scenario{name: "error-line", description: "the turn's only text is one error line (\"" + errorLineText + "\"; --text), end_turn",
			prompt: textScript(errorLineText)},
		&scenario{name: "error-line-prose", description: "an answer that starts like an error line (\"" + errorLineProse + "\"), end_turn",
			prompt: textScript(errorLineProse)},
		&scenario{name: "error-line-after-tool", description: "a thought, a tool call, then one error line, end_turn",
			prompt: promptErrorLineAfterTool},
		&scenario{name: "retry-notes", description: "two retry notes naming a DNS failure (\"" + noteConnection1 + "\"), a blank chunk between, nothing else, end_turn",
			prompt: textScript(noteConnection1, "\n", noteConnection2)},
		&scenario{name: "retry-notes-unnamed", description: "one retry note naming no error (\"" + noteUnnamed + "\"), end_turn",
			prompt: textScript(noteUnnamed)},
		&scenario{name: "note-then-401", description: "a transient retry note (\"" + noteTransient + "\"), then a JSON-RPC error 401 (invalid API key)",
			prompt: promptNoteThen401},
		&scenario{name: "late-output", description: "end_turn at once, then the answer in two message chunks (--delay apart) for no prompt",
			prompt: promptLateOutput},
	)
}

// textScript sends each text as a message chunk (--text replaces the
// first), then end_turn.
func textScript(texts ...string) func(t *turn) error {
	return func(t *turn) error {
		for i, s := range texts {
			if i == 0 && t.a.opts.Text != "" {
				s = t.a.opts.Text
			}
			if err := t.message(s); err != nil {
				return err
			}
		}
		return t.endTurn()
	}
}

func promptErrorLineAfterTool(t *turn) error {
	if err := t.thought("Calling the model."); err != nil {
		return err
	}
	if err := t.update(acp.StartToolCall("call-1", "Read File",
		acp.WithStartKind(acp.ToolKindRead), acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
		return err
	}
	return textScript(errorLineText)(t)
}

func promptNoteThen401(t *turn) error {
	if err := t.message(noteTransient); err != nil {
		return err
	}
	return t.fail(&rpcError{Code: -32603, Message: "Internal error: 401 Unauthorized: Incorrect API key provided: sk-test-****fake."})
}

// promptLateOutput ends the turn while "still retrying" and sends the
// answer afterwards, as one agent did (issue 20).
func promptLateOutput(t *turn) error {
	if err := t.end(acp.StopReasonEndTurn); err != nil {
		return err
	}
	t.sent++ // the pauses apply from here
	if err := t.message("Hello! How can "); err != nil {
		return err
	}
	return t.message("I help you today?")
}
