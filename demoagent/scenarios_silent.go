package demoagent

import (
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// Silent failures and abnormal completions, shaped like what real agents
// did against a fake provider (testdata/transcripts/real): a turn that
// ends end_turn with nothing in it, a broken stream reported as complete
// with zero output tokens, an answer re-streamed by the agent's own
// retry, abnormal stop reasons, and agents that stop talking.

// stallFor is how long the stall-* scenarios stay silent before they
// answer anyway (a late answer the proxy must drop).
const stallFor = 20 * time.Second

func init() {
	scenarios = append(scenarios,
		&scenario{name: "silent-empty", description: "a blank message chunk, then end_turn (claude-agent-acp on an empty provider stream)", prompt: promptSilentEmpty},
		&scenario{name: "silent-truncated", description: "\"Hello from the fake \", then end_turn reporting 0 output tokens (claude-agent-acp after a broken stream)", prompt: promptSilentTruncated},
		&scenario{name: "silent-repeated", description: "\"Hello from the fake \" twice, then \"provider.\", end_turn (gemini-cli re-streaming on its own retry)", prompt: promptSilentRepeated},
		&scenario{name: "refusal", description: "one message chunk, then stopReason refusal", prompt: promptStopReason(acp.StopReasonRefusal)},
		&scenario{name: "max-tokens", description: "one message chunk, then stopReason max_tokens", prompt: promptStopReason(acp.StopReasonMaxTokens)},
		&scenario{name: "empty-then-succeed", description: "the first --fail prompts end_turn at once with no output, later ones succeed", prompt: promptEmptyThenSucceed},
		&scenario{name: "stall-after-text", description: "one message chunk, then silence (session/cancel ignored) for --delay (default 20s), then end_turn", prompt: promptStallAfterText},
	)
}

func promptSilentEmpty(t *turn) error {
	if err := t.message("\n"); err != nil {
		return err
	}
	return t.endTurn()
}

func promptSilentTruncated(t *turn) error {
	if err := t.message("Hello from "); err != nil {
		return err
	}
	if err := t.message("the fake "); err != nil {
		return err
	}
	res := promptResult(acp.StopReasonEndTurn)
	res.Usage = &acp.Usage{InputTokens: 0, OutputTokens: 0, TotalTokens: 0}
	return t.a.w.write(resultLine(t.id, res), true)
}

func promptSilentRepeated(t *turn) error {
	for _, s := range []string{"Hello from ", "the fake ", "Hello from ", "the fake ", "provider."} {
		if err := t.message(s); err != nil {
			return err
		}
	}
	return t.endTurn()
}

func promptStopReason(reason acp.StopReason) func(t *turn) error {
	return func(t *turn) error {
		if err := t.message("I can't continue with this."); err != nil {
			return err
		}
		return t.end(reason)
	}
}

func promptEmptyThenSucceed(t *turn) error {
	if t.n <= t.a.opts.Fail {
		return t.end(acp.StopReasonEndTurn)
	}
	return promptSuccess(t)
}

// promptStallAfterText stops talking after one chunk and ignores
// session/cancel; it answers only after stallFor (or at shutdown).
func promptStallAfterText(t *turn) error {
	if err := t.message("Working on it. "); err != nil {
		return err
	}
	if err := t.a.w.flush(); err != nil {
		return err
	}
	d := stallFor
	if t.a.opts.Delay > 0 {
		d = t.a.opts.Delay
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-t.a.ctx.Done():
		return t.a.ctx.Err()
	}
	return t.end(acp.StopReasonEndTurn)
}
