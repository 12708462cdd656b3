package guard

import (
	evt "github.com/acp-guard/acp-guard/event"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/internal/jsonscan"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// Silent failures and abnormal completions. A successful
// session/prompt result is flagged from evidence, never from silence
// alone:
//
//   - truncated: text was streamed and the usage the agent reports for
//     the turn shows zero output tokens (result.usage.outputTokens as
//     claude-agent-acp sends it, result._meta.quota.token_count.output_tokens
//     as gemini-cli sends it; usage_update notifications carry the
//     context size, not output tokens, and are no evidence here);
//   - repeated: the turn's opening text was streamed again from a chunk
//     boundary (observers/repeat.go defines the run);
//   - empty: stopReason end_turn and no visible output at all: no
//     non-blank text or thought chunk, no plan, no tool call or update,
//     no agent→client request. The agent's own retry notes are not output
//     (evidence.empty.retryNotes counts them; notes that name a known
//     failure make the turn that failure instead, textreport.go).
//
// The flag goes to the client as result._meta.acpGuard.silent (the frame
// otherwise unchanged), to `replay --json` as "silent", to the log and to
// the attempt log. Abnormal stop reasons (refusal, max_tokens,
// max_turn_requests) go as result._meta.acpGuard.stop. A success is only
// rewritten when the policy says empty_turn "error", and only for an
// empty turn the client did not cancel.

// Silent kinds, in the order that picks the one reported.
const (
	SilentTruncated = evt.SilentTruncated
	SilentRepeated  = evt.SilentRepeated
	SilentEmpty     = evt.SilentEmpty
)

// The flags a success is annotated with are package event's.
type (
	Silent            = evt.Silent
	SilentEvidence    = evt.SilentEvidence
	TruncatedEvidence = evt.TruncatedEvidence
	RepeatedEvidence  = evt.RepeatedEvidence
	EmptyEvidence     = evt.EmptyEvidence
	StopNote          = evt.StopNote
)

// abnormalStops maps the stop reasons that end a turn short of an answer
// to their codes; all are request class (the request must change), never
// retried.
var abnormalStops = map[string]StopNote{
	string(acp.StopReasonRefusal):         {Code: classify.CodeContentRefused, Class: string(classify.ClassRequest)},
	string(acp.StopReasonMaxTokens):       {Code: classify.CodeMaxTokens, Class: string(classify.ClassRequest)},
	string(acp.StopReasonMaxTurnRequests): {Code: classify.CodeMaxTurnRequests, Class: string(classify.ClassRequest)},
}

// visibleOutput reports whether the turn showed the client anything.
func visibleOutput(t *observers.Turn) bool {
	e := t.Evidence
	return e.AssistantOutput || e.Thoughts || e.ToolActivity || e.ToolUpdates > 0 || e.Effects > 0 || e.Requests > 0
}

// silentOf flags a successful result of turn t.
func (k *checks) silentOf(p *prompt, t *observers.Turn, r *reply, stopReason string) *Silent {
	var ev SilentEvidence
	if t.Evidence.AssistantOutput {
		if n, src, ok := outputTokens(r); ok && n == 0 {
			ev.Truncated = &TruncatedEvidence{OutputTokens: n, Source: src}
		}
	}
	if times, bytes := t.Repeats(); times > 0 {
		ev.Repeated = &RepeatedEvidence{Times: times, Bytes: bytes}
	}
	if stopReason == string(acp.StopReasonEndTurn) && !visibleOutput(t) {
		ev.Empty = &EmptyEvidence{StopReason: stopReason, Cancelled: t.Evidence.Cancelled, AfterFailure: k.ag.session(p.session).lastFailed,
			RetryNotes: t.Evidence.Diagnostics}
	}
	switch {
	case ev.Truncated != nil:
		return &Silent{Kind: SilentTruncated, Evidence: ev}
	case ev.Repeated != nil:
		return &Silent{Kind: SilentRepeated, Evidence: ev}
	case ev.Empty != nil:
		return &Silent{Kind: SilentEmpty, Evidence: ev}
	}
	return nil
}

// outputTokens reads the output-token count an agent reports in a prompt
// result (parsed as r).
func outputTokens(r *reply) (n int64, source string, ok bool) {
	if v := getIn(r.usage, "outputTokens"); v != nil {
		n, ok = jsonInt(v)
		return n, "usage", ok
	}
	if v := getIn(r.meta, "quota", "token_count", "output_tokens"); v != nil {
		n, ok = jsonInt(v)
		return n, "_meta.quota", ok
	}
	return 0, "", false
}

// getIn is jsonscan.Get of a span that may be absent (nil: nothing to
// read).
func getIn(span []byte, path ...string) []byte {
	if span == nil {
		return nil
	}
	return jsonscan.Get(span, path...)
}

// jsonInt parses a raw JSON non-negative integer.
func jsonInt(raw []byte) (int64, bool) {
	if len(raw) == 0 || len(raw) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// annotation is what a successful result gains under _meta.acpGuard.
type annotation struct {
	silent *Silent
	stop   *StopNote
}

func (a annotation) empty() bool { return a.silent == nil && a.stop == nil }

// annotate flags a successful result and records the flag (log, attempt
// log); the caller puts it on the frame.
func (k *checks) annotate(c transport.Ctl, p *prompt, r *reply) annotation {
	var a annotation
	stopReason := r.stopReason
	a.silent = k.silentOf(p, p.turn, r, stopReason)
	if s, ok := abnormalStops[stopReason]; ok {
		a.stop = &s
	}
	if a.empty() {
		return a
	}
	rec := policy.Record{
		Time: c.Now().UTC(), SessionID: p.session, RequestID: string(p.client.ID), Generation: p.turn.Generation,
		Attempt: p.attempt, Decision: policy.Decision{Action: "none", Reason: "flagged"}, Policy: k.doc,
		Outcome: policy.AttemptFlagged,
	}
	if a.silent != nil {
		rec.Silent = a.silent.Kind
		if k.ev.on() {
			k.ev.emit(SilentFlagged{EventBase: k.ev.base(c, p), Silent: *a.silent})
		}
	}
	if a.stop != nil {
		rec.Code, rec.Class = a.stop.Code, a.stop.Class
		if k.ev.on() {
			k.ev.emit(AbnormalStop{EventBase: k.ev.base(c, p), StopReason: stopReason, Note: *a.stop})
		}
	}
	k.jr.append(c, rec, nil)
	return a
}

// meta returns into with the members an annotation adds to
// _meta.acpGuard (nil: nothing to add).
func (a annotation) meta(into *resultNote) *resultNote {
	if a.empty() {
		return into
	}
	if into == nil {
		into = &resultNote{}
	}
	into.Silent, into.Stop = a.silent, a.stop
	return into
}

// Rule ids of the guard-made verdicts.
const (
	RuleEmptyTurn = "acp-guard.empty_turn.v1"
	RuleStall     = "acp-guard.stall_watchdog.v1"
)

// emptyDiagnostic is the message of an empty turn turned into a failure.
const emptyDiagnostic = "empty response: the agent ended the turn with no output"

// emptyFailure turns an empty end_turn into an empty_response failure when
// the policy says empty_turn "error" — never a turn the client cancelled.
// Nothing reached the client, so the gate lets the normal per-class policy
// retry it.
func (k *checks) emptyFailure(c transport.Ctl, p *prompt) *failure {
	s := p.note.silent
	if k.doc.EmptyTurn != policy.EmptyTurnError || s == nil || s.Kind != SilentEmpty || s.Evidence.Empty.Cancelled {
		return nil
	}
	p.note = annotation{}
	v := classify.Verdict{
		Code: classify.CodeEmptyResponse, Class: classify.ClassOf(classify.CodeEmptyResponse), Confidence: "high",
		Scope: "provider", Rule: RuleEmptyTurn, SafeExcerpt: emptyDiagnostic,
	}
	k.catalogueVersion(&v)
	// A turn of nothing but the agent's retry notes is never replayed: the
	// agent may still be retrying (textreport.go).
	notes := p.turn.Evidence.Diagnostics > 0
	return &failure{verdict: v, source: classify.SourceMessageChunk, rewrite: emptyDiagnostic, turn: p.turn, notesOnly: notes}
}
