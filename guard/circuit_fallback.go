package guard

import (
	"context"
	"time"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/transport"
)

// Cooldown-aware fallback (spec 002) and the fallback summary.

// switchTo starts the model switch a skip scheduled. With circuits, the
// fallback models left are read from the store first (off the event
// loop): one whose circuit is cooling down is skipped, unless a transient
// failure opened it and its cooldown ends within probeWindow (a cooldown
// probe). When every model left is cooling down, the prompt stops with
// circuit_open.
func (g *Guard) switchTo(c transport.Ctl, p *prompt, next string) {
	if !g.circuitsOn() || p.last == nil {
		g.switchModel(c, p, next)
		return
	}
	cands := g.candidates(p)
	if len(cands) == 0 || cands[0] != next {
		cands = append([]string{next}, cands...)
	}
	keys := make([]circuit.Key, len(cands))
	for i, m := range cands {
		keys[i] = g.circuitKey(m, p.last.verdict.Scope)
	}
	epoch, now, cc := p.epoch, c.Now(), g.cfg.Circuits
	g.circOps.do(c, func() func() {
		recs := make([]*circuit.Record, len(keys))
		for i, k := range keys {
			rec, _, err := cc.Get(context.Background(), k, now)
			if err != nil {
				g.log.Debug("circuit get", "key", k.String(), "err", err)
			}
			recs[i] = rec
		}
		return func() { g.pickFallback(c, p, epoch, cands, keys, recs) }
	})
}

// pickFallback switches to the first candidate that is not cooling down.
func (g *Guard) pickFallback(c transport.Ctl, p *prompt, epoch uint64, cands []string, keys []circuit.Key, recs []*circuit.Record) {
	if p.epoch != epoch || p.state != stSwitching || g.closed || !c.Pending(p.client) {
		return
	}
	now := c.Now()
	for i, m := range cands {
		if !coolingDown(recs[i], now) {
			g.switchModel(c, p, m)
			return
		}
		g.log.Info("fallback model skipped: circuit open", "model", m, "until", recs[i].OpenUntil)
		p.tried = append(p.tried, m)
		if p.circ.circuit == nil {
			snap := recs[i].SnapshotAt(keys[i], now)
			p.circ.circuit = &snap
		}
	}
	g.stopWith(c, p, onNoCandidate, ReasonCircuitOpen, false)
}

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
