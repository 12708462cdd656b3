package demoagent

import acp "github.com/coder/acp-go-sdk"

// What counts as output after a Cursor control chunk.
func init() {
	scenarios = append(scenarios,
		&scenario{name: "cursor-then-image", agentName: "cursor-agent",
			description: "Cursor control chunk, then an image message chunk (output: clears the marker), end_turn",
			prompt: func(t *turn) error {
				if err := t.message(t.control(cursorPingTimeout)); err != nil {
					return err
				}
				if err := t.update(acp.UpdateAgentMessage(acp.ImageBlock("iVBORw0KGgo=", "image/png"))); err != nil {
					return err
				}
				return t.endTurn()
			}},
		&scenario{name: "cursor-then-blank", agentName: "cursor-agent",
			description: "Cursor control chunk, then a chunk of non-ASCII whitespace (neither output nor clearing), end_turn",
			prompt: func(t *turn) error {
				if err := t.message(t.control(cursorPingTimeout)); err != nil {
					return err
				}
				if err := t.message("\u00a0\u2003\u3000"); err != nil {
					return err
				}
				return t.endTurn()
			}},
	)
}
