// Package demoagent is a scripted ACP agent: the test double for the whole
// project (relay, projection, recovery and benchmark tests) and the agent
// behind `acp-guard demo-agent --scenario NAME`.
//
// It owns nothing but itself: it uses only the ACP SDK's types and method
// constants, never its Connection (several scenarios deliberately write
// frames no SDK would), and nothing in acp-guard imports it except
// cmd/acp-guard and tests (internal/archtest checks that).
//
// # Protocol
//
// Frames are newline-delimited JSON-RPC 2.0 on stdin/stdout. Input lines of
// any length are read; lines that are not JSON are ignored (and noted on
// stderr). Every stdout frame goes through one mutex-guarded buffered writer
// and is flushed as a whole, so frames never interleave.
//
//   - initialize → protocolVersion 1, agentCapabilities, agentInfo
//     {name: Options.AgentName or the scenario's default, version: Version}.
//   - authenticate → {}.
//   - session/new → {sessionId: "sess-N", models: {availableModels:
//     model-a, model-b, model-c; currentModelId: model-a}, configOptions:
//     [a select option "model" of category model]}.
//   - session/set_model {sessionId, modelId} and session/set_config_option
//     {sessionId, configId: "model", value} switch the session's model; an
//     unknown session, model or option is -32602.
//   - session/prompt runs the scenario's script in its own goroutine:
//     session/update notifications, requests to the client (ids 1, 2, … in
//     the agent's own namespace, matched to the client's responses), then
//     the response, {"stopReason":"end_turn"} unless the script says
//     otherwise. A per-process counter numbers prompts from 1.
//   - session/cancel {sessionId} ends the session's prompts in flight with
//     {"stopReason":"cancelled"} (except "hang --ignore-cancel").
//   - Other requests → -32601; other notifications are ignored.
//
// # Test extension
//
// In every scenario two extra methods let tests push and inspect raw bytes:
//
//   - test/echo {payload: base64} (notification or request): the decoded
//     payload is written to stdout verbatim, plus '\n' if it does not end
//     in one; a request is then answered {}.
//   - test/mirror (request): answered {"line": base64 of the request line
//     exactly as received, without its line terminator}.
//
// # Provider errors
//
// The error scenarios and Options.Error imitate what real adapters send
// (docs/real-agent-errors.md): codex-acp's -32603 "Internal error" with
// data {message, codex_error_info}; claude-agent-acp's -32603 "Internal
// error: API Error: <status> <body>"; gemini's HTTP status as the code with
// the API error body as the message; Cursor's "Error: RetriableError: …"
// message chunk followed by end_turn. The shape follows the agent name
// (cursor, codex, claude, gemini, else generic). testdata/failures.golden
// holds every family × kind as the client sees it.
//
// # Lifetime
//
// At stdin EOF the turns in flight finish (requests to the client fail at
// once, as no answer can come) and Run returns nil; "hang" and
// "ignore-term" instead stay until ctx ends, as a stuck process stays until
// it is killed. Run returns ctx.Err() when ctx is cancelled, and an
// *ExitError when a script ends the process ("crash", "crash-signal"),
// which the command turns into an exit code or a signal to itself.
package demoagent
