package guard

import (
	"fmt"

	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// actionDesc is what a policy decision's action is to the guard: the
// event that moves the prompt (its row in [transitions] says where to),
// the work it starts once its attempt record is durable, how its notice
// names it, and the stop reasons that are its own. A recovery action is
// its part (the work) plus one row of [recoveryActions]; recovery, notices and
// the ProviderError read the row instead of switching on the action.
type actionDesc struct {
	on event
	// start is the action's work, run once the transition's record is
	// durable; nil: the action stops, and the client gets the failure.
	start func(rc *recovery, c transport.Ctl, p *prompt, f *failure, d policy.Decision, next string)
	// notice is the notice's action (NoticeSent.Action and
	// _meta.acpGuard.retry.action) of an action announced before its
	// timer ("" when it sends no retry notice), and words what a person
	// reads in it: the verb and the count of the attempt.
	notice string
	words  func(d policy.Decision, maxRetries int) (verb, count string)
	// stops are the recovery reasons of a stop this action led to: the
	// ProviderError then says recovery.action is this one.
	stops []string
}

// recoveryActions is the one declaration of the recovery actions
// (TestEveryActionHasARow fails when a policy action lacks its row). It
// is filled by init: the actions' work leads back to recoveryAction,
// which reads it.
var recoveryActions map[policy.Action]actionDesc

func init() {
	recoveryActions = map[policy.Action]actionDesc{
		policy.ActionRetry: {on: onRetry, start: (*recovery).arm, notice: "retry",
			words: func(d policy.Decision, maxRetries int) (string, string) {
				return "retrying", fmt.Sprintf("retry %d/%d", d.Attempt, maxRetries)
			}},
		policy.ActionWait: {on: onWait, start: (*recovery).arm, notice: "wait_for_reset",
			words: func(policy.Decision, int) (string, string) {
				return "waiting for the provider's reset, then retrying", "after the reset"
			}},
		policy.ActionSkip: {on: onSkip, start: func(rc *recovery, c transport.Ctl, p *prompt, _ *failure, _ policy.Decision, next string) {
			rc.sw.switchTo(c, p, next)
		}},
		policy.ActionCompact: {on: onCompact, start: func(rc *recovery, c transport.Ctl, p *prompt, f *failure, _ policy.Decision, _ string) {
			rc.comp.compact(c, p, f)
		}, stops: []string{ReasonCompactionFailed, ReasonCompactionEmpty, ReasonOverflowAfterCompaction, ReasonNoCompactionCommand}},
		policy.ActionStop: {on: onStop},
	}
}

// actionOf is the row of d's action; an action without one stops.
func actionOf(a policy.Action) actionDesc {
	if d, ok := recoveryActions[a]; ok {
		return d
	}
	return recoveryActions[policy.ActionStop]
}

// recoveryAction is the ProviderError's recovery.action for a stop with
// reason: the action whose stop reason it is ("compact" when compaction
// was what stopped), else "stop".
func recoveryAction(reason string) string {
	for a, d := range recoveryActions {
		for _, r := range d.stops {
			if r == reason {
				return string(a)
			}
		}
	}
	return string(policy.ActionStop)
}
