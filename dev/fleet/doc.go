// Package fleet measures shared circuits at fleet scale: N acp-guard
// processes, one session each, each in front of its own demo agent (the
// provider stand-in: `acp-guard demo-agent --scenario outage`, which fails
// every prompt while one outage file exists), all sharing one circuit
// store — a NATS JetStream server run inside the harness
// (github.com/nats-io/nats-server/v2), the file store in one state
// directory, or none (--circuits off, the baseline).
//
// One run:
//
//	harness ──stdin/stdout──► acp-guard ×N ──► acp-guard demo-agent ×N
//	   │                         │                  │
//	   │ outage file, store       └── circuits ──► NATS (in the harness) | circuits.json
//	   └── attempts file ◄──────────────────────────┘ (one line per prompt the agents got)
//
// The harness opens every session, sends one prompt to each at once, ends
// the outage (after a fixed time or when a condition on what happened so
// far holds), optionally kills the NATS server and starts it again on the
// same port and store directory, and reads every answer. Then it closes
// every proxy's stdin, reads its output to the end (a second answer to
// the prompt is counted, and is a failure) and computes the Result from
// the attempts file (written by the agents with their own clock), the
// answers, and the proxies' logs ("circuit store unavailable", "circuit
// store recovered", "circuit probe", each stamped when the harness read
// it):
//
//   - attempts during the outage: every prompt an agent received before
//     the outage ended, the sessions' own and the retries;
//   - retries per cooldown window: the retries during the outage counted
//     in the windows of the policy's schedule (initial·(2^k − 1) after the
//     first failure: the circuit's own schedule when every session runs
//     the same policy), the most in one window;
//   - release spread: from the end of the outage to the last success;
//   - answers: how many sessions got end_turn exactly once, and what the
//     others got;
//   - the store: proxies that fell back to their own schedule while the
//     store was up (logged "circuit store unavailable" outside the
//     kill-to-restart span), and after a restart how soon each proxy's
//     store answered again.
//
// dev/fleet/cmd/fleet-cluster runs the same fleet on a three-server
// JetStream cluster across network namespaces (Config.NATSURL, Wrap:
// each proxy under `ip netns exec` of its host) with scripted faults
// (Config.Faults: a leader killed, a host partitioned, servers restarted,
// a burst of writes) and measures sharing's resumption from each fault's
// healing.
//
// Two front ends: the small runs in fleet_test.go (a few processes, every
// phase ended by a condition, not by time, so they pass on a busy
// machine) and dev/fleet/cmd/fleet, which `make fleet` runs for N = 50, 100 and
// 200 and prints a Markdown table (docs/CIRCUITS.md). Neither asserts a
// timing; the program prints figures, and checks only the issue's
// conditions (every session answered once with the provider's success,
// ≤ 2 retries per window, no fallback while the store is up) to set its
// exit status.
//
// RunOverlay (dev/fleet/cmd/fleet -overlay) measures a catalogue overlay's
// reach instead: N proxies started with --catalogue-overlay store, each in
// front of a demo agent whose prompts fail with an error the embedded
// catalogue leaves unclassified; `acp-guard catalogue publish` of an
// overlay with a rule for it; per proxy, the time from the publish to its
// log line saying it validated the overlay (stamped when the harness read
// it); then one prompt each, counted when the overlay's rule classified
// it (docs/CATALOGUE.md has the figures).
//
// Dependencies: fleet imports the module's circuit package only to read
// the circuit's record at the end of a run, and nats-server to run the
// store; it runs the acp-guard binary. The outage scenario's environment
// names are repeated here (a test keeps them equal to demoagent's), so
// that demoagent stays imported by cmd/acp-guard and tests only.
package fleet
