// Package jsonrpc2cmp measures why acp-guard's relay does not use
// github.com/sourcegraph/jsonrpc2 (ARCHITECTURE.md, "Why the relay does
// not use a JSON-RPC library"). It is a module of its own so that the
// library it compares with stays out of acp-guard's go.mod.
//
//	cd dev/bench/jsonrpc2cmp && go test -run Fidelity -v .   # what reaches the client
//	cd dev/bench/jsonrpc2cmp && go test -run '^$' -bench . .  # what a frame costs
//
// Both sides relay the agent's frames to the client over in-memory pipes,
// end to end: acp-guard's transport.Run (a plain relay, no hooks) with the
// agent on AgentPipes, and a forwarder built the way the library is meant
// to be used — a jsonrpc2.Conn on each side, the agent side's Handler
// passing each message on through the client side's Conn.
package jsonrpc2cmp
