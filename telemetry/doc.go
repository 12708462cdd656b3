// Package telemetry exports OpenTelemetry traces and metrics about the
// turns acp-guard relays, over OTLP (http/protobuf or grpc) to a collector.
// It is off unless an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_*) or
// --otel is given, honours the standard OTEL_* variables, and when off
// creates nothing. docs/TELEMETRY.md lists what is exported and the
// queries an operator runs.
//
// It is a subscriber of the guard's event stream (event.Event): Event is
// called on the relay's event loop for every event but frames, copies the
// event into a bounded queue and returns — when the queue is full the
// event is dropped and counted (acp_guard.telemetry.dropped), never
// waited for. It parses no frame and wraps nothing: what it reports — the
// verdict, the decision, the agent's error code, the prompt's W3C trace
// context — comes with the events. One worker goroutine, owned by
// Telemetry and ended by Close, turns events into spans and metric
// points; it builds the tracer and meter providers (and their resource:
// service.name, service.version, a random service.instance.id per
// pipeline, the agent as initialize named it) at the first turn. The
// OpenTelemetry SDK batches and exports on its own goroutines. A failing
// exporter is logged once. Close flushes within Settings.Flush: 0.9 s
// (MaxFlush), or the OTLP timeout when it is shorter, whatever the
// collector does. FromEnv reports every setting it cannot use as an error,
// which the caller logs before running without telemetry.
//
// What leaves the process: adapter, model, outcome, stop reason, semantic
// code, class, rule, confidence, replaySafe, attempts, decisions,
// transitions, durations, JSON-RPC error codes, and the ProviderError's
// safeExcerpt (already redacted and bounded). Never a prompt, a message
// text, an error message or a raw session id (it is hashed unless
// --otel-session-id says raw or omit).
//
// Building with -tags nootel leaves the OpenTelemetry modules out (a binary
// about 19 MB smaller and about 8 MiB less resident; see docs/PERFORMANCE.md):
// New then returns ErrNotBuilt and the proxy logs one warning if telemetry
// was asked for.
package telemetry
