package guard

import (
	"sort"

	"github.com/acp-guard/acp-guard/classify"
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
func (g *Guard) Flush(c transport.Ctl) {
	pending := make([]*prompt, 0, len(g.prompts))
	for _, p := range g.prompts {
		pending = append(pending, p)
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].client.Seq < pending[j].client.Seq })
	for _, p := range pending {
		delete(g.prompts, p.client)
		recovering := p.waiting || p.attempt > 0 || len(p.decisions) > 0
		p.stopTimer()
		if !recovering {
			p.suppressed += p.turn.Evidence.Suppressed
			g.report(p, TurnReport{Outcome: OutcomeFailed})
			continue
		}
		rep := TurnReport{Outcome: OutcomeRetried}
		if f := p.last; f != nil {
			pe := newProviderError(f.verdict, f.turn, g.adapter, f.source, c.Now())
			if f.signature != nil {
				pe.Source = f.signature.Source
				pe.ProviderID = f.signature.Adapter
				if f.excerpt != "" {
					pe.SafeExcerpt = classify.Sanitize(f.excerpt)
				}
			}
			pe.Model = p.model
			action := string(policy.ActionStop)
			if len(p.decisions) > 0 {
				action = string(p.decisions[len(p.decisions)-1].Action)
			}
			pe.Recovery = Recovery{Action: action, Attempt: p.attempt, MaxRetries: p.maxRetries, Reason: "session_ended"}
			rep.ProviderError = &pe
		}
		g.report(p, rep)
	}
}
