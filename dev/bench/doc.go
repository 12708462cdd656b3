// Package bench is the end-to-end relay benchmark: it measures what putting
// acp-guard between a client and an agent costs, against the same agent
// reached directly and through a plain byte-copy relay (dev/bench/cmd/bytecopy,
// two io.Copy calls in a separate process), all in one run.
//
// Every configuration drives the same child, `acp-guard demo-agent`, over
// real pipes:
//
//	direct:    client ─────────────────────────► demo-agent
//	bytecopy:  client ─► bytecopy ─────────────► demo-agent
//	acp-guard: client ─► acp-guard -- … ───────► demo-agent
//
// The client (client.go) writes initialize, session/new and then
// session/prompt frames and reads lines until each prompt's response. It
// never decodes a notification: a line that starts like a session/update
// notification is only counted (lines and bytes); anything else is looked at
// to find the response to the prompt.
//
// Workloads (Workloads) are a streaming turn of 20,000 notifications of
// 64 bytes, one of 200 notifications of 64 KiB, and empty prompts whose
// round trip is the measure. Results carry throughput (agent→client bytes
// and frames per second of prompt time), per-prompt latency percentiles and
// the relay process's peak resident set (VmHWM from /proc, read after the
// last prompt and before the relay is asked to exit).
//
// Two front ends use the harness: the Go benchmarks in e2e_test.go
// (`go test -bench . ./dev/bench/`) and the program dev/bench/cmd/e2ebench, which
// interleaves rounds of all configurations and prints a Markdown table with
// the ratios acp-guard / bytecopy. Neither asserts a timing; the unit tests
// here check only what the harness counts and computes.
//
// Dependencies: bench imports nothing of the module at run time; it runs
// the acp-guard and bytecopy binaries that Build produces.
package bench
