// Package telemetry exports OpenTelemetry traces and metrics about the
// turns acp-guard relays, over OTLP (http/protobuf or grpc) to a collector.
// It is off unless an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_*) or
// --otel is given, and it honours the standard OTEL_* variables.
//
// It never reaches into the guard: it sees only what the guard already
// offers to its wiring —
//
//   - Hooks wraps the guard's transport.Hooks (and the Ctl handed to it)
//     to see client prompts, the agent's answers, the proxy's own requests
//     (retries, model switches) and the notices the guard writes;
//   - Attempts tees the guard's AttemptLog (one record per decision:
//     semantic code, class, rule, action, delay);
//   - Turn is the guard's Config.OnTurn (one TurnReport per client prompt).
//
// All of these run on the relay goroutine, so each only copies a few
// fields into a bounded queue and returns; when the queue is full the event
// is dropped and counted (acp_guard.telemetry.dropped), never waited for.
// One worker goroutine, owned by Telemetry and ended by Close, turns events
// into spans and metric points; the OpenTelemetry SDK batches and exports
// them on its own goroutines. A failing exporter is logged once. Close
// flushes within the deadline it is given (the proxy's grace period).
//
// What leaves the process: adapter, model, outcome, stop reason, semantic
// code, class, rule, confidence, replaySafe, attempts, decisions, durations,
// JSON-RPC error codes, and the ProviderError's safeExcerpt (already
// redacted and bounded). Never a prompt, a message text, an error message
// or a raw session id (it is hashed unless ACP_GUARD_OTEL_SESSION_ID says
// raw or omit).
//
// Building with -tags nootel leaves the OpenTelemetry modules out (a binary
// about 19 MB smaller and about 8 MiB less resident; see docs/PERFORMANCE.md):
// New then returns ErrNotBuilt and the proxy logs one warning if telemetry
// was asked for.
package telemetry
