package guard

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// notice tells the client, before a delayed retry or wait, what happens next.
func (g *Guard) notice(c transport.Ctl, p *prompt, f *failure, d policy.Decision) {
	if g.cfg.Notices == NoticesOff {
		return
	}
	kind := "agent_thought_chunk"
	if g.cfg.Notices == NoticesMessage {
		kind = "agent_message_chunk"
	}
	deadline := d.Deadline.UTC()
	if d.Deadline.IsZero() {
		deadline = c.Now().Add(d.Delay).UTC()
	}
	next := "retry"
	verb := "retrying"
	if d.Action == policy.ActionWait {
		next, verb = "wait_for_reset", "waiting for the provider's reset, then retrying"
	}
	attempt := d.Attempt // the retry's ordinal; 0 for a reset wait
	count := fmt.Sprintf("retry %d/%d", attempt, p.maxRetries)
	if d.Action == policy.ActionWait {
		count = "after the reset"
	}
	text := fmt.Sprintf("%s — %s in %s (%s)", humanCode(f.verdict.Code), verb, roundDur(d.Delay), count)
	meta := map[string]any{"acpGuard": map[string]any{"retry": map[string]any{
		"attempt": attempt, "maxRetries": p.maxRetries, "delayMs": d.Delay.Milliseconds(),
		"deadline": deadline.Format(time.RFC3339), "code": f.verdict.Code, "class": string(f.verdict.Class),
		"action": next, "rule": f.verdict.Rule,
		// What happens if this attempt fails too and the budget is spent.
		"onExhausted": string(g.classPolicy(f.verdict.Class).OnExhausted),
	}}}
	upd := map[string]any{
		"sessionUpdate": kind,
		"content":       map[string]any{"type": "text", "text": text + "\n"},
		"_meta":         meta,
	}
	frame, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": acp.ClientMethodSessionUpdate,
		"params": map[string]any{"sessionId": p.session, "update": upd}})
	if err != nil {
		return
	}
	c.ToClient(append(frame, '\n'))
}

func humanCode(code string) string {
	switch code {
	case "provider_overloaded":
		return "provider overloaded"
	case "rate_limited":
		return "rate limited"
	case "agent_transport_lost":
		return "connection to the provider lost"
	case "quota_limited":
		return "usage quota reached"
	}
	return strings.ReplaceAll(code, "_", " ")
}

func roundDur(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
