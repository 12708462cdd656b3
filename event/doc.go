// Package event holds the shapes a guarded session reports in: the typed
// event stream (Event and the event types), the turn report that
// `acp-guard replay --json` prints (TurnReport, with its Outcome and
// Decision), the ProviderError a failed request is answered with, and the
// agent's exit status.
//
// It is a leaf: it imports nothing of the module but internal/platform,
// and everything else may import it. The guard builds these values, the
// library (package acpguard) hands them to a caller under the same names,
// and telemetry, replay and the command read them. They are part of the
// library's supported API, so they change only compatibly: fields and
// event types are added, never removed or retyped. The packages that
// decide (guard, policy, classify, circuit) keep their own types and
// convert to these where they report, so that they may change freely.
//
// # Delivery
//
// Events are delivered on the relay's event loop, in the order things
// happened, under its lock: a subscriber must not block, do I/O or call
// back into the session; one that needs to do work queues it (package
// telemetry does). Slices in an event alias the guard's memory and are
// valid only during the call unless documented otherwise; copy what you
// keep. New event types and fields may be added: ignore what you do not
// know.
package event
