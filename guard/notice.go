package guard

import (
	"encoding/json"
	"fmt"
	"github.com/acp-guard/acp-guard/classify"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// notice tells the client, before a delayed retry or wait, what happens next.
func (g *Guard) notice(c transport.Ctl, p *prompt, f *failure, d policy.Decision) {
	g.say(c, p, noticeText(p, f, d), g.noticeMeta(c, p, f, d))
}

// say sends a notice: text for a person, retry (_meta.acpGuard.retry) for
// machines, on the configured channel.
func (g *Guard) say(c transport.Ctl, p *prompt, text string, retry map[string]any) {
	if g.cfg.Notices == NoticesOff {
		return
	}
	kind := "agent_thought_chunk"
	if g.cfg.Notices == NoticesMessage {
		kind = "agent_message_chunk"
	}
	upd := map[string]any{
		"sessionUpdate": kind,
		"content":       map[string]any{"type": "text", "text": text + "\n"},
		"_meta":         map[string]any{"acpGuard": map[string]any{"retry": retry}},
	}
	frame, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": acp.ClientMethodSessionUpdate,
		"params": map[string]any{"sessionId": p.session, "update": upd}})
	if err != nil {
		return
	}
	c.ToClient(append(frame, '\n'))
	g.log.Info("notice sent", "session", p.session, "id", string(p.client.ID), "action", retry["action"], "text", text)
}

// noticeText is the notice a person reads.
func noticeText(p *prompt, f *failure, d policy.Decision) string {
	verb, count := "retrying", fmt.Sprintf("retry %d/%d", d.Attempt, p.maxRetries)
	if d.Action == policy.ActionWait {
		verb, count = "waiting for the provider's reset, then retrying", "after the reset"
	}
	return fmt.Sprintf("%s — %s in %s (%s)", humanCode(f.verdict.Code), verb, roundDur(d.Delay), count)
}

// noticeMeta is the notice's _meta.acpGuard.retry, for machines.
func (g *Guard) noticeMeta(c transport.Ctl, p *prompt, f *failure, d policy.Decision) map[string]any {
	deadline := d.Deadline.UTC()
	if d.Deadline.IsZero() {
		deadline = c.Now().Add(d.Delay).UTC()
	}
	next := "retry"
	if d.Action == policy.ActionWait {
		next = "wait_for_reset"
	}
	return map[string]any{
		"attempt":    d.Attempt, // the retry's ordinal; 0 for a reset wait
		"maxRetries": p.maxRetries, "delayMs": d.Delay.Milliseconds(),
		"deadline": deadline.Format(time.RFC3339), "code": f.verdict.Code, "class": string(f.verdict.Class),
		"action": next, "rule": f.verdict.Rule,
		// What happens if this attempt fails too and the budget is spent.
		"onExhausted": string(g.onExhausted(f.verdict)),
	}
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

// onExhausted is what the policy of v does when its budget is spent.
func (g *Guard) onExhausted(v classify.Verdict) policy.Outcome {
	cp, _ := g.policyFor(v)
	return cp.OnExhausted
}
