//go:build !nootel

package telemetry

import (
	"errors"

	"go.opentelemetry.io/otel/metric"
)

// instruments are the metrics (docs/TELEMETRY.md lists them with their
// attributes).
type instruments struct {
	failures     metric.Int64Counter     // acp_guard.provider.failures
	recoveries   metric.Int64Counter     // acp_guard.recoveries
	notices      metric.Int64Counter     // acp_guard.notices
	frames       metric.Int64Counter     // acp_guard.frames
	turns        metric.Float64Histogram // acp_guard.turn.duration (s)
	waits        metric.Float64Histogram // acp_guard.wait.duration (s)
	switches     metric.Int64Counter     // acp_guard.model.switches
	dropped      metric.Int64Counter     // acp_guard.telemetry.dropped
	silent       metric.Int64Counter     // acp_guard.silent
	circuitStops metric.Int64Counter     // acp_guard.circuit.stops
	circuits     metric.Int64Counter     // acp_guard.circuit.decisions
	late         metric.Int64Counter     // acp_guard.late_output
}

// SecondBuckets are the bucket bounds of the duration histograms, in
// seconds: from a fast turn (50 ms) to an hour's reset wait.
var SecondBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

func newInstruments(m metric.Meter) (instruments, error) {
	var in instruments
	var errs [12]error
	in.failures, errs[0] = m.Int64Counter("acp_guard.provider.failures", metric.WithDescription("Classified provider failures, one per failed attempt"))
	in.recoveries, errs[1] = m.Int64Counter("acp_guard.recoveries", metric.WithDescription("Prompt turns in which recovery was attempted, by how they ended"))
	in.notices, errs[2] = m.Int64Counter("acp_guard.notices", metric.WithDescription("Retry and wait notices sent to the client"))
	in.frames, errs[3] = m.Int64Counter("acp_guard.frames", metric.WithDescription("Frames relayed"))
	in.turns, errs[4] = m.Float64Histogram("acp_guard.turn.duration", metric.WithUnit("s"),
		metric.WithDescription("Client prompt turns, from the request to the answer"), metric.WithExplicitBucketBoundaries(SecondBuckets...))
	in.waits, errs[5] = m.Float64Histogram("acp_guard.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("Time a turn was held between a failed attempt and the next (or the end of recovery)"), metric.WithExplicitBucketBoundaries(SecondBuckets...))
	in.switches, errs[6] = m.Int64Counter("acp_guard.model.switches", metric.WithDescription("Model switches the proxy asked for"))
	in.dropped, errs[7] = m.Int64Counter("acp_guard.telemetry.dropped", metric.WithDescription("Telemetry events dropped because the queue was full"))
	in.silent, errs[8] = m.Int64Counter("acp_guard.silent", metric.WithDescription("Successful turns flagged as silent failures (empty, truncated, repeated)"))
	in.circuitStops, errs[9] = m.Int64Counter("acp_guard.circuit.stops", metric.WithDescription("Turns whose recovery a shared circuit stopped (recovery.reason circuit_open)"))
	in.circuits, errs[10] = m.Int64Counter("acp_guard.circuit.decisions", metric.WithDescription("Decisions of shared circuits about held prompts (go, probe, park, open, skip_model)"))
	in.late, errs[11] = m.Int64Counter("acp_guard.late_output", metric.WithDescription("Text chunks for a session after its prompt was answered and before its next prompt"))
	return in, errors.Join(errs[:]...)
}
