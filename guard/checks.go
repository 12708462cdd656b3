package guard

import (
	"log/slog"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// checks turns what an agent answered into a failure, a flag or nothing:
// the classification of errors (the engine, quiet or observed), the
// control-chunk markers, text-reported failures and retry notes
// (textreport.go), silent failures and abnormal stops (silent.go), the
// guard-made verdicts (an empty turn, a stall), set-up and launch
// failures (setup.go), and the signatures it binds for the observers
// (signatures.go). It decides nothing about recovery.
type checks struct {
	engine  *classify.Engine        // nil: everything is unclassified
	quiet   *classify.Engine        // engine without its Observed callback (textreport.go)
	source  func() *classify.Engine // Config.Catalogue; nil: engine throughout
	doc     policy.Document         // empty_turn; recorded with a flag
	ag      *agent
	tracker *observers.Tracker
	jr      *journal // a flag's record (silent.go)
	ev      *emitter
	log     *slog.Logger
}

func (k *checks) classify(ev classify.Evidence) classify.Verdict {
	if k.engine == nil {
		return classify.Verdict{Code: "unclassified", Class: classify.ClassUnclassified, Confidence: "low", Scope: "unknown",
			SafeExcerpt: classify.Sanitize(ev.Message)}
	}
	return k.engine.Classify(ev)
}

// refresh takes the engine the catalogue source has for the turn that
// starts (an overlay published since the last turn); without a source it
// is a nil check.
func (k *checks) refresh() {
	if k.source == nil {
		return
	}
	if e := k.source(); e != nil && e != k.engine {
		k.engine, k.quiet = e, e.Quiet()
	}
}

// catalogueVersion stamps a guard-made verdict with the catalogue in use.
func (k *checks) catalogueVersion(v *classify.Verdict) {
	if k.engine != nil {
		v.CatalogueVersion = k.engine.Version()
	}
}

// markerFailure is the failure of a pending control-chunk marker: Cursor's
// constant diagnostic, or a KindReport chunk classified from its own text.
func (k *checks) markerFailure(c transport.Ctl, t *observers.Turn) *failure {
	sig := t.Marker
	ev := classify.Evidence{
		Source: classify.SourceMessageChunk, Adapter: k.ag.adapter, Message: sig.EvidenceText(t.MarkerText),
		Phase: "prompt", Generation: t.Generation, Stderr: t.StderrNear(c.Now(), t.MarkerText), Now: c.Now(),
	}
	f := &failure{source: classify.SourceMessageChunk, rewrite: sig.Diagnostic, signature: sig, excerpt: t.MarkerSuffix, turn: t}
	if sig.ClassifyText {
		f.verdict = k.classifyText(ev, false)
		t.StatedRetries = classify.StatedRetries(t.MarkerText)
	} else {
		f.verdict = k.classify(ev)
	}
	return f
}

// rpcFailure classifies an agent's JSON-RPC error response m, whose
// error e was parsed where it arrived.
func (k *checks) rpcFailure(c transport.Ctl, t *observers.Turn, m *transport.Msg, e *rpcErrorObject) *failure {
	ev := classify.Evidence{
		Source: classify.SourceRPCError, Adapter: k.ag.adapter, Phase: "prompt", Generation: t.Generation,
		Now: c.Now(), Chunk: t.ReportedText(),
	}
	if e.codeOK {
		ev.RPCCode = &e.Code
	}
	ev.Message, ev.Data = e.Message, e.Data
	ev.Stderr = t.StderrNear(c.Now(), e.Message+"\n"+string(e.Data)+"\n"+ev.Chunk)
	t.StatedRetries = max(classify.StatedRetries(e.Message), classify.StatedRetries(string(e.Data)))
	// The relay reuses m and its buffer: keep a copy of the frame, and of
	// its parsed error pointing into it.
	msg, rpc := cloneMsg(m, e)
	return &failure{verdict: k.classify(ev), source: classify.SourceRPCError, msg: msg, rpc: rpc, turn: t}
}

// exitFailure is the failure of turn t cut short by the agent's exit (or
// its closed stdout).
func (k *checks) exitFailure(c transport.Ctl, t *observers.Turn, st transport.ExitStatus) *failure {
	ev := classify.Evidence{
		Source:     classify.SourceExit,
		Adapter:    k.ag.adapter,
		Chunk:      t.ReportedText(),
		Stderr:     t.StderrNear(c.Now(), t.ReportedText()),
		Signal:     st.Signal,
		Phase:      "prompt",
		Generation: t.Generation,
		Now:        c.Now(),
	}
	code := st.Code
	ev.ExitCode = &code
	if st.StartErr != nil {
		ev.Message = st.StartErr.Error()
	}
	if st.OutputClosed { // still running: no exit code, a lost transport
		ev.ExitCode, ev.Message = nil, transport.OutputClosedMessage
	}
	return &failure{verdict: k.classify(ev), source: classify.SourceExit, turn: t}
}

// clientClosedFailure is the failure of turn t when the agent exited
// after the client had closed its input: the agent saw its stdin end (or
// acp-guard stopped it for the client's close), which says nothing about
// the provider. It is never classified from stderr, and never recovered.
func (k *checks) clientClosedFailure(t *observers.Turn) *failure {
	v := classify.Verdict{Code: classify.CodeUnclassified, Class: classify.ClassUnclassified, Confidence: "low", Scope: "agent",
		Reason: classify.ReasonClientClosed, SafeExcerpt: clientClosedExcerpt}
	k.catalogueVersion(&v)
	return &failure{verdict: v, source: classify.SourceExit, turn: t}
}

// clientClosedExcerpt is the excerpt of a clientClosedFailure.
const clientClosedExcerpt = "the client closed its input before the agent answered"
