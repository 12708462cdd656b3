//go:build !nootel

package telemetry

import (
	"errors"

	"go.opentelemetry.io/otel/metric"
)

// instruments are the metrics (README "Telemetry" lists them).
type instruments struct {
	failures   metric.Int64Counter     // acp_guard.provider.failures {code, class, adapter, model}
	recoveries metric.Int64Counter     // acp_guard.recoveries {outcome, action}
	notices    metric.Int64Counter     // acp_guard.notices {action}
	frames     metric.Int64Counter     // acp_guard.frames {direction}
	turns      metric.Float64Histogram // acp_guard.turn.duration {outcome, adapter, model}
	waits      metric.Float64Histogram // acp_guard.wait.duration {action, class}
	switches   metric.Int64Counter     // acp_guard.model.switches {model, result}
	dropped    metric.Int64Counter     // acp_guard.telemetry.dropped
	silent     metric.Int64Counter     // acp_guard.silent {kind, adapter}
	circuits   metric.Int64Counter     // acp_guard.circuit.stops {state}
	late       metric.Int64Counter     // acp_guard.late_output {adapter}
}

func newInstruments(m metric.Meter) (instruments, error) {
	var in instruments
	var errs [11]error
	in.failures, errs[0] = m.Int64Counter("acp_guard.provider.failures", metric.WithDescription("Classified provider failures, one per failed attempt"))
	in.recoveries, errs[1] = m.Int64Counter("acp_guard.recoveries", metric.WithDescription("Prompt turns in which recovery was attempted, by how they ended"))
	in.notices, errs[2] = m.Int64Counter("acp_guard.notices", metric.WithDescription("Retry and wait notices sent to the client"))
	in.frames, errs[3] = m.Int64Counter("acp_guard.frames", metric.WithDescription("Frames relayed"))
	in.turns, errs[4] = m.Float64Histogram("acp_guard.turn.duration", metric.WithUnit("s"), metric.WithDescription("Client prompt turns, from the request to the answer"))
	in.waits, errs[5] = m.Float64Histogram("acp_guard.wait.duration", metric.WithUnit("s"), metric.WithDescription("Time a turn waited between a failed attempt and the next"))
	in.switches, errs[6] = m.Int64Counter("acp_guard.model.switches", metric.WithDescription("Model switches the proxy asked for"))
	in.dropped, errs[7] = m.Int64Counter("acp_guard.telemetry.dropped", metric.WithDescription("Telemetry events dropped because the queue was full"))
	in.silent, errs[8] = m.Int64Counter("acp_guard.silent", metric.WithDescription("Successful turns flagged as silent failures (empty, truncated, repeated)"))
	in.circuits, errs[9] = m.Int64Counter("acp_guard.circuit.stops", metric.WithDescription("Turns whose recovery a shared circuit stopped (recovery.reason circuit_open)"))
	in.late, errs[10] = m.Int64Counter("acp_guard.late_output", metric.WithDescription("Text chunks for a session after its prompt was answered and before its next prompt"))
	return in, errors.Join(errs[:]...)
}
