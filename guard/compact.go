package guard

import (
	"bytes"
	"encoding/json"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/internal/jsonscan"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// Compaction (policy request.compact_then_retry). A
// replay-safe context overflow on an agent whose latest
// available_commands_update advertises a compaction command ("compact",
// else "compress") is recovered by acp-guard's own session/prompt with
// that command and then one re-send of the client's prompt:
//
//	active | retrying --compact--> compacting --compacted--> retrying
//
// The compacting state holds the turn like a wait (late.go): until the
// compaction turn is dispatched every update for the session is late
// activity; afterwards the session's updates belong to the compaction turn
// (they are forwarded with _meta.acpGuard.compaction: true), while an
// agent→client request or an unparseable line still stops recovery. ACP
// updates name no turn, so a chunk the agent still sends for the failed
// turn after that point cannot be told from the compaction's own; a tool
// call or tool update in that window fails the compaction
// (compaction_failed), as does one of the compaction itself. At most one
// compaction per client prompt: an overflow after it stops.
//
// Cost: with the policy off, one flag test per session/update; on, the
// updates the observers did not recognise (not chunks, tools or plans) are
// searched for "available_commands_update", and while a compaction runs
// the session's updates are copied once to add the mark.

// Recovery reasons of compaction; their ProviderError says recovery.action
// "compact".
const (
	ReasonCompactionFailed        = "compaction_failed"         // the compaction turn errored, was cancelled by the agent, or did more than compact
	ReasonCompactionEmpty         = "compaction_empty"          // the compaction turn ended with no update at all
	ReasonOverflowAfterCompaction = "overflow_after_compaction" // the retry after compaction overflowed again
	ReasonNoCompactionCommand     = "no_compaction_command"     // the agent advertises no compaction command
	reasonCompact                 = "compact"                   // the decision to compact
)

// compactionCommands are the command names acp-guard runs, in preference
// order: codex-acp, claude-agent-acp and Copilot CLI offer "compact",
// qwen-code "compress".
var compactionCommands = []string{"compact", "compress"}

// compactNoticeText is what a person reads before the compaction.
const compactNoticeText = "context window exceeded — compacting the conversation, then retrying (1/1)"

// compactor does the work of the compacting state: it decides a context
// overflow when the policy allows compaction, sends the compaction
// command, follows its turn, and learns each session's command.
type compactor struct {
	on      bool // policy request.compact_then_retry
	m       *machine
	rc      *recovery
	ag      *agent
	ev      *emitter
	tracker *observers.Tracker
}

// compaction is the tag of acp-guard's own compaction session/prompt and
// what the guard knows about its turn.
type compaction struct {
	p       *prompt
	f       fence           // the compacting state it was sent in
	turn    *observers.Turn // the compaction turn
	updates int             // session/updates the compaction turn sent
}

// resultNote is what a result gains under _meta.acpGuard: the recovery
// that produced it (resultMeta) and its flags (annotation.meta). Its
// members are in the order encoding/json gives a map's sorted keys, so it
// encodes as the map it replaced did, without a map's reflection.
type resultNote struct {
	Attempts  int       `json:"attempts,omitempty"` // ≥ 1 when recovered
	Compacted bool      `json:"compacted,omitempty"`
	Model     string    `json:"model,omitempty"`
	Silent    *Silent   `json:"silent,omitempty"`
	Stop      *StopNote `json:"stop,omitempty"`
}

// resultMeta is what a recovered result adds under _meta.acpGuard (nil:
// nothing, the agent's frame goes as it is).
func resultMeta(p *prompt) *resultNote {
	if p.attempt == 0 && p.model == "" && p.compaction == nil {
		return nil // the client's own attempt, untouched
	}
	return &resultNote{Attempts: p.attempt + 1, Model: p.model, Compacted: p.compaction != nil}
}

// compactDecision decides a context overflow when the policy allows
// compaction (ok false: the policy's decision stands).
func (cp *compactor) decision(p *prompt, f *failure, safe bool) (policy.Decision, bool) {
	if !cp.on || f.verdict.Code != classify.CodeContextOverflow {
		return policy.Decision{}, false
	}
	d := policy.Decision{Action: policy.ActionStop, Class: string(f.verdict.Class)}
	switch {
	case p.compaction != nil:
		d.Reason = ReasonOverflowAfterCompaction
	case !safe:
		d.Reason = policy.ReasonUnsafe
	case cp.ag.session(p.session).compactCmd == "":
		d.Reason = ReasonNoCompactionCommand
	default:
		d.Action, d.Attempt, d.MaxRetries, d.Reason = policy.ActionCompact, 1, 1, reasonCompact
		p.maxRetries = 1
	}
	return d, true
}

// compact is the work of the compact transition, once its record is
// durable: the notice, then the compaction command as acp-guard's own
// session/prompt (the proxy's id namespace).
func (cp *compactor) compact(c transport.Ctl, p *prompt, f *failure) {
	if !cp.rc.dispatchable(c, p, p.turn) {
		return
	}
	cp.ev.say(c, p, compactNoticeText, map[string]any{
		"attempt": 1, "maxRetries": 1, "delayMs": 0, "deadline": c.Now().UTC().Format("2006-01-02T15:04:05Z07:00"),
		"code": f.verdict.Code, "class": string(f.verdict.Class), "action": reasonCompact, "rule": f.verdict.Rule,
		"onExhausted": string(policy.OutcomeStop),
	}, NoticeSent{Action: reasonCompact, Deadline: c.Now(), Attempt: 1, MaxRetries: 1, Code: f.verdict.Code, Class: string(f.verdict.Class)})
	cmd := cp.ag.session(p.session).compactCmd
	// The prompt's trace context goes on to the agent with the compaction.
	params, _ := json.Marshal(acp.PromptRequest{SessionId: acp.SessionId(p.session), Prompt: []acp.ContentBlock{acp.TextBlock("/" + cmd)},
		Meta: traceMeta(p.params)})
	k := &compaction{p: p, f: cp.m.fence(p), turn: cp.tracker.Start(p.session, c.Now())}
	p.compaction = k
	cp.ev.attemptSent(c, p, AttemptCompaction, acp.AgentMethodSessionPrompt, cp.ag.modelOf(p))
	c.Call(acp.AgentMethodSessionPrompt, p.session, params, k)
}

// compacted settles the compaction turn: a clean end_turn with updates and
// no tool activity re-sends the client's prompt at once; anything else
// stops with the reason. The answer acts on the prompt only under the
// fence the compaction was sent with.
func (cp *compactor) compacted(c transport.Ctl, k *compaction, r *reply) {
	stopReason := r.stopReason
	cp.tracker.Return(k.turn, stopReason)
	p := k.p
	if !k.f.live() || !cp.rc.dispatchable(c, p, k.turn) {
		return
	}
	e := k.turn.Evidence
	reason, refused := r.refused() // the relay never sent it (shutting down, agent gone)
	switch {
	case refused:
		if reason == "" {
			reason = ReasonCompactionFailed
		}
	case r.err != nil || stopReason != string(acp.StopReasonEndTurn) || e.Cancelled || k.turn.Marker != nil:
		reason = ReasonCompactionFailed // an error, in a response or as a control chunk
	case e.ToolActivity || e.ToolUpdates > 0 || e.Effects > 0 || e.Unparseable > 0:
		reason = ReasonCompactionFailed // a compaction never acts
	case k.updates == 0:
		reason = ReasonCompactionEmpty
	}
	if reason != "" {
		cp.rc.stopWith(c, p, onCompactFail, reason, false)
		return
	}
	cp.m.transit(c, p, step{on: onCompacted}, func() { cp.rc.dispatchRetry(c, p) })
}

// compactionUpdate runs for every session/update the relay forwards when
// the policy allows compaction: it learns the session's compaction command
// and marks the updates of a compaction turn. known is true when the
// observers parsed the update as a chunk, tool or plan update: only the
// other updates are searched for an available_commands_update.
func (cp *compactor) update(c transport.Ctl, m *transport.Msg, known bool) transport.Verdict {
	if !known && bytes.Contains(m.Params, []byte(`"available_commands_update"`)) {
		cp.learnCommands(m.Params)
	}
	if cp.m.waiting == 0 {
		return transport.Forward
	}
	sid, _ := jsonscan.String(jsonscan.Get(m.Params, "sessionId"))
	for _, p := range cp.m.held(sid, false) {
		k := p.compaction
		if p.state != stCompacting || k == nil || k.f.moved() || !cp.tracker.Current(k.turn) {
			continue
		}
		k.updates++
		upd := jsonscan.Get(m.Params, "update")
		if len(upd) == 0 || upd[0] != '{' {
			return transport.Forward
		}
		if line := withUpdateMeta(m.Line, upd); line != nil {
			c.ToClient(line)
			return transport.Drop
		}
		return transport.Forward
	}
	return transport.Forward
}

// learnCommands keeps the compaction command of the session's latest
// available_commands_update ("" when it offers none).
func (cp *compactor) learnCommands(params []byte) {
	var n acp.SessionNotification
	jsonscan.Note(params)
	if json.Unmarshal(params, &n) != nil || n.Update.AvailableCommandsUpdate == nil {
		return
	}
	cmd := ""
	for _, want := range compactionCommands {
		for _, ac := range n.Update.AvailableCommandsUpdate.AvailableCommands {
			if ac.Name == want && cmd == "" {
				cmd = want
			}
		}
	}
	cp.ag.session(string(n.SessionId)).compactCmd = cmd
}

// withUpdateMeta returns a copy of line with "compaction":true under the
// update object's _meta.acpGuard, keeping every member the agent wrote
// (nil: the update is marked already).
func withUpdateMeta(line, upd []byte) []byte {
	meta := jsonscan.Get(upd, "_meta")
	if len(meta) == 0 || meta[0] != '{' {
		return withMember(line, upd, "_meta", []byte(`{"acpGuard":{"compaction":true}}`))
	}
	if ag := jsonscan.Get(meta, "acpGuard"); len(ag) > 0 && ag[0] == '{' {
		if jsonscan.Get(ag, "compaction") != nil {
			return nil // marked already (by another acp-guard behind this one)
		}
		return withMember(line, ag, "compaction", []byte("true"))
	}
	return withMember(line, meta, "acpGuard", []byte(`{"compaction":true}`))
}
