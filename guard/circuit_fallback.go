package guard

import (
	"time"

	"github.com/acp-guard/acp-guard/circuit"
)

// Cooldown-aware fallback (switch.go picks the model) and the fallback
// summary.

// coolingDown reports whether a fallback model's circuit keeps it from
// being tried now.
func coolingDown(rec *circuit.Record, now time.Time) bool {
	if !rec.OpenAt(now) || !now.Before(rec.OpenUntil) {
		return false
	}
	probe := rec.Class == "transient" && rec.OpenUntil.Sub(now) <= probeWindow
	return !probe
}

// summarize adds the fallback summary and the circuit to a ProviderError:
// attempts, soonestRetryAt and aborted once the prompt went through a
// fallback chain, circuit when a circuit decided.
func (p *prompt) summarize(pe *ProviderError, reason string) {
	if reason == ReasonCircuitOpen && p.circ.circuit != nil {
		s := *p.circ.circuit
		pe.Circuit = &s
	}
	if len(p.tried) == 0 || len(p.circ.attempts) == 0 {
		return
	}
	pe.Attempts = append([]Attempt(nil), p.circ.attempts...)
	for _, a := range pe.Attempts {
		if a.CooldownUntil != nil && (pe.SoonestRetryAt == nil || *a.CooldownUntil < *pe.SoonestRetryAt) {
			s := *a.CooldownUntil
			pe.SoonestRetryAt = &s
		}
	}
	switch reason {
	case ReasonLateActivity, ReasonSuperseded, ReasonAgentExited, ReasonStateUnwritable:
		pe.Aborted = true
	}
}
