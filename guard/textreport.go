package guard

import (
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/transport"
)

// Text-reported failures and retry notes, for every adapter.
//
//   - An error line: a turn that ends end_turn whose whole visible text is
//     one error line (classify.ParseErrorLine) is a failure when the engine
//     recognises the line (ClassifyText: a verdict that is not
//     unclassified) or the line carries a provider error shape (an HTTP
//     status, an error body). The text was forwarded; it is a diagnostic,
//     not output, for the safety gate. Adapter signatures add (Copilot's
//     "Error: …" chunk after output, Cursor's exact control chunk) or veto
//     (text with Cursor's prefix that Cursor's rule refuses).
//   - Retry notes (classify.ParseNote) in assistant text are diagnostics:
//     forwarded, not output. A turn that ends end_turn with nothing but
//     notes becomes the failure the latest note names when the engine
//     recognises it — recovery then stops with reason diagnostic_only (no
//     error followed the notes, and the agent may still be retrying:
//     replaying the prompt could overlap its answer) — and is otherwise
//     flagged silent empty (evidence.empty.retryNotes).
//   - A note in assistant text (an ACP diagnostic: the client saw it)
//     counts for recovery only when it matches the error that follows
//     (docs/WIRE.md): a classified note whose class differs from the
//     failure's stops recovery (diagnostic_mismatch). Retry notes on stderr are counted
//     among the agent's retries but never weighed: the client never saw
//     them.

// Messages of the JSON-RPC errors text-reported failures become.
const (
	errorLineDiagnostic = observers.ReportDiagnostic
	notesDiagnostic     = "Error: the agent ended the turn with only its own retry notes"
)

// classifyText classifies text the agent printed (an error line, a note).
// quiet: not a failure's verdict (an Observed engine is not told).
func (k *checks) classifyText(ev classify.Evidence, quiet bool) classify.Verdict {
	switch {
	case k.engine == nil:
		return k.classify(ev)
	case quiet:
		return k.quiet.ClassifyText(ev)
	}
	return k.engine.ClassifyText(ev)
}

// acceptErrorLine is the test that makes text a text-reported failure
// (classify.Engine.ReportedFailure): one error line that the engine
// recognises or that carries a provider error shape. It is quiet: the
// caller classifies an accepted line again, observed, when it becomes the
// turn's failure.
func (k *checks) acceptErrorLine(ev classify.Evidence) (classify.ErrorLine, classify.Verdict, bool) {
	if k.engine != nil {
		return k.quiet.ReportedFailure(ev)
	}
	l, ok := classify.ParseErrorLine(ev.Message)
	return l, k.classify(ev), ok && l.Shape()
}

// chunkAccept binds KindReport signatures: a chunk that is by itself an
// accepted error line (no turn context: timing is settled at prompt
// return).
func (k *checks) chunkAccept(adapter, text string) bool {
	if k.engine == nil {
		return false
	}
	_, _, ok := k.quiet.ReportedFailure(classify.Evidence{Adapter: adapter, Message: text, Phase: "prompt"})
	return ok
}

// vetoedErrorLine reports whether an adapter signature vetoes text.
func (k *checks) vetoedErrorLine(text string) bool {
	for i := range k.tracker.Signatures {
		if k.tracker.Signatures[i].Vetoes(k.ag.adapter, text) {
			return true
		}
	}
	return false
}

// settleErrorLine decides on the turn's candidate error line (its whole
// visible text, when that may be one): it stays a diagnostic when it is
// an accepted error line the adapter does not veto, and is output
// otherwise. For a turn that ended end_turn (and was not cancelled) an
// accepted line is the failure returned.
func (k *checks) settleErrorLine(c transport.Ctl, t *observers.Turn, stopReason string) *failure {
	text, ok := t.ErrorLineText()
	if !ok {
		t.SettleErrorLine(false)
		return nil
	}
	ev := classify.Evidence{Adapter: k.ag.adapter, Message: text, Phase: "prompt", Generation: t.Generation, Stderr: t.StderrNear(c.Now(), text), Now: c.Now()}
	l, v, ok := k.acceptErrorLine(ev)
	ok = ok && !k.vetoedErrorLine(text)
	t.SettleErrorLine(ok)
	if !ok || stopReason != string(acp.StopReasonEndTurn) || t.Evidence.Cancelled {
		return nil
	}
	t.StatedRetries = classify.StatedRetries(text)
	if k.engine != nil {
		v = k.classifyText(ev, false) // the failure's verdict, seen by an Observed engine
	}
	return &failure{verdict: v, source: classify.SourceMessageChunk, rewrite: errorLineDiagnostic, excerpt: l.Body, turn: t}
}

// notesFailure turns an end_turn that showed nothing but retry notes into
// the failure the latest note names, when the engine recognises it.
func (k *checks) notesFailure(c transport.Ctl, t *observers.Turn, stopReason string) *failure {
	note := t.LastNote()
	if t.Evidence.Diagnostics == 0 || note == "" || visibleOutput(t) || t.Evidence.Cancelled ||
		stopReason != string(acp.StopReasonEndTurn) {
		return nil
	}
	v := k.noteVerdict(t, c.Now(), false)
	if v.Code == classify.CodeUnclassified {
		return nil
	}
	return &failure{verdict: v, source: classify.SourceMessageChunk, rewrite: notesDiagnostic, excerpt: note, turn: t, notesOnly: true}
}

// noteVerdict classifies the turn's latest retry note (quiet: only to
// weigh it against a failure). Timing in a note is the agent's own
// schedule ("retrying in 2s"), not a provider hint: it is dropped.
func (k *checks) noteVerdict(t *observers.Turn, now time.Time, quiet bool) classify.Verdict {
	note := t.LastNote()
	if note == "" {
		return classify.Verdict{Code: classify.CodeUnclassified, Class: classify.ClassUnclassified}
	}
	v := k.classifyText(classify.Evidence{Adapter: k.ag.adapter, Message: note, Phase: "prompt", Generation: t.Generation, Now: now}, quiet)
	v.RetryAfter, v.ResetAt = nil, nil
	return v
}

// noteClass is the class the turn's latest retry note names ("" when
// there is none, or the engine does not recognise it): what the failure
// that follows must match for the note to count.
func (k *checks) noteClass(t *observers.Turn, now time.Time) string {
	v := k.noteVerdict(t, now, true)
	if v.Class == classify.ClassUnclassified || v.Class == "" {
		return ""
	}
	return string(v.Class)
}
