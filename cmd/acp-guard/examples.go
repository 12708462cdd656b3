package main

import "github.com/spf13/cobra"

// examples are the --help examples of the commands that do not set their
// own, keyed by command path (kept in one table so each command file stays
// about its behaviour).
var examples = map[string]string{
	"acp-guard run": `  acp-guard run -- codex-acp
  acp-guard run --policy policy.json --log-level info -- npx @zed-industries/claude-agent-acp`,
	"acp-guard attempts": `  acp-guard attempts
  acp-guard attempts --state-dir /var/lib/acp-guard --session 0199a1b2-c3d4 --json`,
	"acp-guard catalogue":        `  acp-guard catalogue list`,
	"acp-guard catalogue list":   `  acp-guard catalogue list --json | head`,
	"acp-guard catalogue show":   `  acp-guard catalogue show anthropic.overloaded_error.v1`,
	"acp-guard catalogue test":   `  acp-guard catalogue test --catalogue reviewed.json`,
	"acp-guard catalogue lint":   `  acp-guard catalogue lint`,
	"acp-guard catalogue export": `  acp-guard catalogue export > reviewed.json`,
	"acp-guard classify": `  acp-guard classify 'API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}' --adapter claude-agent-acp
  acp-guard classify --adapter codex-acp 'stream disconnected before completion: error sending request for url (https://api.openai.com/v1/responses)'
  acp-guard classify --adapter gemini-cli '{"source":"rpc_error","rpcCode":500,"message":"exception TypeError: fetch failed sending request"}'
  acp-guard classify 'unexpected status 404 Not Found: The model does not exist'
  echo 'stream disconnected before completion' | acp-guard classify --adapter codex-acp
  acp-guard classify --transcript /tmp/fail.jsonl --turn 1`,
	"acp-guard demo": `  acp-guard demo
  acp-guard demo --scenario codex-error,fail-then-succeed --raw`,
	"acp-guard demo-agent":     `  acp-guard -- acp-guard demo-agent --scenario fail-then-succeed --fail 2`,
	"acp-guard policy":         `  acp-guard policy check policy.json`,
	"acp-guard policy default": `  acp-guard policy default > ~/.config/acp-guard/policy.json`,
	"acp-guard replay": `  acp-guard replay session.jsonl
  acp-guard replay --json --policy policy.json runs/*.jsonl
  acp-guard replay --serve session.jsonl
  acp-guard --policy other.json -- acp-guard replay --serve --agent-only session.jsonl`,
}

// addExamples sets the examples of every command under cmd that has none.
func addExamples(cmd *cobra.Command) {
	if cmd.Example == "" {
		cmd.Example = examples[cmd.CommandPath()]
	}
	for _, c := range cmd.Commands() {
		addExamples(c)
	}
}
