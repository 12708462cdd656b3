package guard

import (
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// Flush reports every client prompt that is still pending, for a session
// that ends (a transcript played offline runs out) before they were
// answered. It stops their timers and answers nothing: the client is gone.
//
//   - A prompt whose recovery was under way (a retry or wait scheduled, or
//     a retry sent and not yet answered) is reported with outcome
//     "retried", its latest decision and, when an attempt failed, the
//     ProviderError the guard would have answered with had it stopped.
//   - A prompt whose response never came is reported with outcome "failed"
//     and neither stopReason nor error: there was no answer to report.
//
// Prompts are reported in the order the client sent them. Flush reports
// each prompt at most once, like every other report.
func (g *Guard) Flush(c transport.Ctl) { g.rc.flush(c) }

// flush is Flush's work.
func (rc *recovery) flush(c transport.Ctl) {
	for _, p := range rc.m.pending() {
		rc.checks.settleErrorLine(c, p.turn, "") // the text so far: a diagnostic error line, or output
		// A prompt stalled on the client's own attempt is not recovering.
		recovering := (p.state != stActive && p.state != stStalled) || p.attempt > 0 || len(p.decisions) > 0
		rc.m.transit(c, p, step{on: onEnded}, nil)
		if !recovering {
			p.suppressed += p.turn.Evidence.Suppressed
			rc.respond(c, p, TurnReport{Outcome: OutcomeFailed}, nil)
			continue
		}
		rep := TurnReport{Outcome: OutcomeRetried}
		if f := p.last; f != nil {
			action := string(policy.ActionStop)
			if len(p.decisions) > 0 {
				action = string(p.decisions[len(p.decisions)-1].Action)
			}
			pe := rc.providerError(c, p, f, action, ReasonSessionEnded)
			rep.ProviderError = &pe
		}
		rc.respond(c, p, rep, nil)
	}
	rc.ag.closeAllLate(c)
}
