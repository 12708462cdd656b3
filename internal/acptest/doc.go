// Package acptest is the one ACP test client and harness of acp-guard's
// end-to-end tests: a process — the built acp-guard binary, the demo agent,
// any agent — run over real pipes on all three standard streams, in its own
// process group, and driven line by line as an editor would drive it.
//
// It is line-based on purpose, not built on an ACP or JSON-RPC connection
// (ARCHITECTURE.md says why the relay is not either): the tests send
// malformed, duplicate, oversized and cut-off frames on purpose and check
// the bytes that come back, every answer counted. Frames are decoded here
// with encoding/json, independently of the proxy's own scanner.
//
//   - Frame, Parse and the frame builders (Request, Prompt, …): the wire.
//   - Start runs a command under a test (Guard: acp-guard around an agent;
//     DemoAgent: the binary's demo agent); Proc reads and writes it
//     synchronously, so a test sets the client's pace, down to not reading
//     at all. Its cleanup ends the process and checks that the agent's
//     process group is gone.
//   - Spawn runs one without a test, for long-lived drivers (the interop
//     suite); Client reads such a process in the background, answers the
//     agent's requests, and lets callers wait for frames with a context.
//   - Answerer: how agent→client requests are answered.
//   - WaitGroupGone, LiveInGroup, VmHWM: what the tests check about
//     processes, from /proc.
//
// Only tests (and the interop suite, a test driver) import it.
package acptest
