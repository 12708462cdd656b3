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

// notice tells the client, before a delayed retry or wait, what happens
// next: the action's row (action.go) names it and gives its words.
func (rc *recovery) notice(c transport.Ctl, p *prompt, f *failure, d policy.Decision) {
	deadline := d.Deadline
	if deadline.IsZero() {
		deadline = c.Now().Add(d.Delay)
	}
	rc.ev.say(c, p, noticeText(p, f, d), noticeMeta(c, rc.doc, p, f, d), NoticeSent{Action: actionOf(d.Action).notice, Delay: d.Delay, Deadline: deadline,
		Attempt: d.Attempt, MaxRetries: p.maxRetries, Code: f.verdict.Code, Class: string(f.verdict.Class)})
}

// say sends a notice: text for a person, retry (_meta.acpGuard.retry) for
// machines, on the configured channel; ev is the notice as its event
// reports it.
func (e *emitter) say(c transport.Ctl, p *prompt, text string, retry map[string]any, ev NoticeSent) {
	if e.notify(c, p.session, text, map[string]any{"retry": retry}) && e.on() {
		ev.EventBase, ev.Text = e.base(c, p), text
		e.emit(ev)
	}
}

// notify sends a notice for session sid on the configured channel: text
// for a person, meta as its update's _meta.acpGuard for machines. It
// reports whether one was sent.
func (e *emitter) notify(c transport.Ctl, sid, text string, meta map[string]any) bool {
	if e.notices == NoticesOff {
		return false
	}
	kind := "agent_thought_chunk"
	if e.notices == NoticesMessage {
		kind = "agent_message_chunk"
	}
	upd := map[string]any{
		"sessionUpdate": kind,
		"content":       map[string]any{"type": "text", "text": text + "\n"},
		"_meta":         map[string]any{"acpGuard": meta},
	}
	frame, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": acp.ClientMethodSessionUpdate,
		"params": map[string]any{"sessionId": sid, "update": upd}})
	if err != nil {
		return false
	}
	c.ToClient(append(frame, '\n'))
	return true
}

// noticeText is the notice a person reads.
func noticeText(p *prompt, f *failure, d policy.Decision) string {
	verb, count := actionOf(d.Action).words(d, p.maxRetries)
	if d.Reason == policy.ReasonRetryHintHonoured {
		count += ", as the provider asked"
	}
	return fmt.Sprintf("%s — %s in %s (%s)", humanCode(f.verdict.Code), verb, roundDur(d.Delay), count)
}

// noticeMeta is the notice's _meta.acpGuard.retry, for machines.
func noticeMeta(c transport.Ctl, doc policy.Document, p *prompt, f *failure, d policy.Decision) map[string]any {
	deadline := d.Deadline.UTC()
	if d.Deadline.IsZero() {
		deadline = c.Now().Add(d.Delay).UTC()
	}
	m := map[string]any{
		"attempt":    d.Attempt, // the retry's ordinal; 0 for a reset wait
		"maxRetries": p.maxRetries, "delayMs": d.Delay.Milliseconds(),
		"deadline": deadline.Format(time.RFC3339), "code": f.verdict.Code, "class": string(f.verdict.Class),
		"action": actionOf(d.Action).notice, "rule": f.verdict.Rule,
		// What happens if this attempt fails too and the budget is spent.
		"onExhausted": string(onExhausted(doc, f.verdict)),
	}
	if d.Reason == policy.ReasonRetryHintHonoured {
		// The delay is the provider's hint, beyond the policy's backoff
		// (honour_hint_up_to_seconds): the decision's reason says so.
		m["reason"] = d.Reason
	}
	return m
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
func onExhausted(doc policy.Document, v classify.Verdict) policy.Outcome {
	cp, _ := policyFor(doc, v)
	return cp.OnExhausted
}
