//go:build !nootel

package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
)

// worker turns events into spans and metric points. Only the worker
// goroutine (Telemetry.run) touches it, and Close after that goroutine
// returned.
type worker struct {
	t            *Telemetry
	identity     observers.Identity
	agent        string // the adapter the latest event named
	agentName    string // initialize's agentInfo
	agentVersion string
	provided     bool
	hashes       map[string]string // session → its hashed id (computed once)
	turns        map[string]*turn  // client request id → its turn in flight
}

// turn is one client prompt in flight.
type turn struct {
	session string
	start   time.Time
	ctx     context.Context // holds the turn span
	span    trace.Span
	model   string
	child   trace.Span // the request of acp-guard's own in flight (retry, switch, compaction)
	// A wait: from the decision to hold the turn (a delayed retry, a
	// reset wait) to the next attempt, through any parking on a circuit.
	waiting    bool
	waitFrom   time.Time
	waitClass  string
	waitAction string
	announced  int64 // the delay the notice announced (ms)
}

func newWorker(t *Telemetry, id observers.Identity) *worker {
	w := &worker{t: t, identity: id, hashes: map[string]string{}, turns: map[string]*turn{}}
	w.agent, _ = id.Resolve()
	return w
}

func (w *worker) adapter() string { return w.agent }

func (w *worker) handle(e event.Event) {
	if a := e.Base().Agent; a != "" {
		w.agent = a
	}
	switch e := e.(type) {
	case event.AgentIdentified:
		w.agentName, w.agentVersion = e.Name, e.Version
	case event.TurnStarted:
		w.started(e)
	case event.FailureClassified:
		w.failure(e)
	case event.Transition:
		w.transition(e)
	case event.AttemptSent:
		w.sent(e)
	case event.AttemptDone:
		w.done(e)
	case event.NoticeSent:
		w.notice(e)
	case event.CircuitDecision:
		w.provide()
		w.t.inst.circuits.Add(context.Background(), 1, metric.WithAttributes(attribute.String("acp_guard.circuit.decision", e.Decision)))
		w.spanEvent(e.EventBase, "acp_guard.circuit", attribute.String("acp_guard.circuit.decision", e.Decision),
			attribute.String("acp_guard.circuit.key", e.Key), attribute.String("acp_guard.circuit.state", e.Circuit.State))
	case event.RecoveryAction:
		w.spanEvent(e.EventBase, "acp_guard.action", attribute.String("acp_guard.action", e.Action), attribute.String("acp_guard.by", e.By),
			attribute.String("acp_guard.from", e.From), attribute.String("acp_guard.to", e.To), attribute.String("acp_guard.refused", e.Refused))
	case event.Stalled:
		w.spanEvent(e.EventBase, "acp_guard.stall", attribute.Int64("acp_guard.stall.idle_ms", e.Idle.Milliseconds()))
	case event.Answered:
		w.answered(e)
	case event.LateOutput:
		w.provide()
		w.t.inst.late.Add(context.Background(), int64(e.Chunks), metric.WithAttributes(attribute.String("acp_guard.adapter", w.adapter())))
	}
}

// turnOf is the turn an event is about, nil if none is open.
func (w *worker) turnOf(b event.EventBase) *turn {
	if b.RequestID == nil {
		return nil
	}
	return w.turns[string(b.RequestID)]
}

func (w *worker) spanEvent(b event.EventBase, name string, attrs ...attribute.KeyValue) {
	if tn := w.turnOf(b); tn != nil {
		tn.span.AddEvent(name, trace.WithTimestamp(b.At), trace.WithAttributes(attrs...))
	}
}

// started opens the turn's span: a child of the client's span when the
// prompt carried a W3C trace context in its _meta.
func (w *worker) started(e event.TurnStarted) {
	w.provide()
	tn := &turn{session: e.SessionID, start: e.At, model: e.Model}
	parent := context.Background()
	if e.Trace.Traceparent != "" {
		parent = propagation.TraceContext{}.Extract(parent, propagation.MapCarrier{
			"traceparent": e.Trace.Traceparent, "tracestate": e.Trace.Tracestate})
	}
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.provider.name", providerName(w.adapter())),
		attribute.String("gen_ai.agent.name", w.adapter()),
		attribute.String("acp_guard.adapter", w.adapter()),
		attribute.String("acp_guard.request_id", requestID(e.RequestID)),
	}
	if e.Model != "" {
		attrs = append(attrs, attribute.String("gen_ai.request.model", e.Model))
	}
	if sid, ok := w.sessionAttr(e.SessionID); ok {
		attrs = append(attrs, sid)
	}
	tn.ctx, tn.span = w.t.tracer.Start(parent, "acp.session/prompt",
		trace.WithTimestamp(e.At), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	w.turns[string(e.RequestID)] = tn
}

// sessionAttr is the session id attribute as configured.
func (w *worker) sessionAttr(id string) (attribute.KeyValue, bool) {
	switch w.t.set.SessionID {
	case SessionOmit:
		return attribute.KeyValue{}, false
	case SessionRaw:
		return attribute.String("acp.session.id", id), true
	}
	h, ok := w.hashes[id]
	if !ok {
		sum := sha256.Sum256([]byte(id))
		h = hex.EncodeToString(sum[:8])
		w.hashes[id] = h
	}
	return attribute.String("acp.session.id_hash", h), true
}

// failure counts one classified failure — each failed attempt is
// classified exactly once — and notes it on the turn's span.
func (w *worker) failure(e event.FailureClassified) {
	w.provide()
	v := e.Verdict
	model := e.Model
	if tn := w.turnOf(e.EventBase); tn != nil && model == "" {
		model = tn.model
	}
	w.t.inst.failures.Add(context.Background(), 1, metric.WithAttributes(
		attribute.String("error.type", v.Code), attribute.String("acp_guard.error.class", string(v.Class)),
		attribute.String("acp_guard.phase", e.Phase), attribute.String("acp_guard.adapter", w.adapter()),
		attribute.String("gen_ai.provider.name", providerName(w.adapter())), attribute.String("gen_ai.request.model", model)))
	attrs := []attribute.KeyValue{
		attribute.Int("acp_guard.attempt", e.Attempt), attribute.String("error.type", v.Code),
		attribute.String("acp_guard.error.class", string(v.Class)), attribute.String("acp_guard.error.rule", v.Rule),
		attribute.Bool("acp_guard.replay_safe", e.ReplaySafe),
		attribute.String("acp_guard.decision.action", string(e.Decision.Action)),
		attribute.String("acp_guard.decision.reason", e.Decision.Reason),
		attribute.Int64("acp_guard.decision.delay_ms", e.Decision.Delay.Milliseconds()),
	}
	if e.Error != nil {
		attrs = append(attrs, attribute.Int("rpc.jsonrpc.error_code", e.Error.Code))
	}
	w.spanEvent(e.EventBase, "acp_guard.failure", attrs...)
}

// transition notes the move on the turn's span and times the waits.
func (w *worker) transition(e event.Transition) {
	tn := w.turnOf(e.EventBase)
	if tn == nil {
		return
	}
	tn.span.AddEvent("acp_guard.transition", trace.WithTimestamp(e.At), trace.WithAttributes(
		attribute.String("acp_guard.from", e.From), attribute.String("acp_guard.event", e.On),
		attribute.String("acp_guard.to", e.To), attribute.String("acp_guard.decision.reason", e.Decision.Reason),
		attribute.String("acp_guard.by", e.By)))
	switch to := guard.DescribeState(e.To); {
	case to.Timed:
		if !tn.waiting {
			tn.waiting, tn.waitFrom = true, e.At
			tn.waitClass, tn.waitAction = e.Decision.Class, string(e.Decision.Action)
		}
	case to.Actionable: // parked: the wait goes on
	case to.Retry:
		w.endWait(tn, e.At, "attempt")
	default:
		w.endWait(tn, e.At, "stopped")
	}
}

// endWait records a wait that ended: with the next attempt, or without.
func (w *worker) endWait(tn *turn, at time.Time, result string) {
	if !tn.waiting {
		return
	}
	tn.waiting = false
	_, span := w.t.tracer.Start(tn.ctx, "acp_guard.wait", trace.WithTimestamp(tn.waitFrom),
		trace.WithAttributes(attribute.Int64("acp_guard.wait.announced_ms", tn.announced), attribute.String("acp_guard.wait.result", result)))
	span.End(trace.WithTimestamp(at))
	w.t.inst.waits.Record(context.Background(), at.Sub(tn.waitFrom).Seconds(), metric.WithAttributes(
		attribute.String("acp_guard.error.class", tn.waitClass), attribute.String("acp_guard.decision.action", tn.waitAction),
		attribute.String("acp_guard.wait.result", result)))
	tn.announced = 0
}

var childNames = map[string]string{guard.AttemptRetry: "acp_guard.retry", guard.AttemptSwitch: "acp_guard.switch_model", guard.AttemptCompaction: "acp_guard.compaction"}

// sent starts a child span for acp-guard's own request.
func (w *worker) sent(e event.AttemptSent) {
	tn := w.turnOf(e.EventBase)
	if tn == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("rpc.method", e.Method), attribute.Int("acp_guard.attempt", e.Attempt)}
	if e.Model != "" {
		attrs = append(attrs, attribute.String("gen_ai.request.model", e.Model))
	}
	_, tn.child = w.t.tracer.Start(tn.ctx, childNames[e.Kind], trace.WithTimestamp(e.At),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// done ends the child span; a model switch is counted.
func (w *worker) done(e event.AttemptDone) {
	tn := w.turnOf(e.EventBase)
	if tn == nil || tn.child == nil {
		return
	}
	if !e.OK {
		tn.child.SetStatus(codes.Error, "agent error")
		if e.Error != nil {
			tn.child.SetAttributes(attribute.Int("rpc.jsonrpc.error_code", e.Error.Code))
		}
		if e.NotSent != "" {
			tn.child.SetAttributes(attribute.String("acp_guard.not_sent", e.NotSent))
		}
	}
	tn.child.End(trace.WithTimestamp(e.At))
	tn.child = nil
	if e.Kind == guard.AttemptSwitch {
		result := "ok"
		if e.OK {
			tn.model = e.Model
		} else {
			result = "refused"
		}
		w.t.inst.switches.Add(context.Background(), 1, metric.WithAttributes(
			attribute.String("gen_ai.request.model", e.Model), attribute.String("acp_guard.result", result)))
	}
}

func (w *worker) notice(e event.NoticeSent) {
	w.provide()
	w.t.inst.notices.Add(context.Background(), 1, metric.WithAttributes(attribute.String("acp_guard.action", e.Action)))
	if tn := w.turnOf(e.EventBase); tn != nil {
		tn.announced = e.Delay.Milliseconds()
		tn.span.AddEvent("acp_guard.notice", trace.WithTimestamp(e.At), trace.WithAttributes(
			attribute.String("acp_guard.action", e.Action), attribute.Int64("acp_guard.delay_ms", e.Delay.Milliseconds())))
	}
}

// answered ends the turn's span with what the guard decided, and counts
// the turn.
func (w *worker) answered(e event.Answered) {
	w.provide()
	r := &e.Report
	tn := w.turns[string(e.RequestID)]
	if tn == nil {
		return
	}
	delete(w.turns, string(e.RequestID))
	w.endWait(tn, e.At, "stopped")
	if tn.child != nil {
		tn.child.End(trace.WithTimestamp(e.At))
	}
	if pe := r.ProviderError; pe != nil && pe.Model != "" {
		tn.model = pe.Model
	}
	if r.Model != "" {
		tn.model = r.Model
	}
	ctx := context.Background()
	if r.Silent != "" {
		w.t.inst.silent.Add(ctx, 1, metric.WithAttributes(attribute.String("acp_guard.silent.kind", r.Silent), attribute.String("acp_guard.adapter", w.adapter())))
	}
	if pe := r.ProviderError; pe != nil && pe.Circuit != nil {
		w.t.inst.circuitStops.Add(ctx, 1, metric.WithAttributes(attribute.String("acp_guard.circuit.state", pe.Circuit.State)))
	}
	tn.span.SetAttributes(turnAttrs(r, tn.model)...)
	if r.Outcome != guard.OutcomePassed && r.Outcome != guard.OutcomeRetried {
		tn.span.SetStatus(codes.Error, string(r.Outcome))
	}
	if r.Attempts > 1 || (r.Decision != nil && r.Decision.Action != "stop" && r.Decision.Action != "none") {
		action := ""
		if r.Decision != nil {
			action = string(r.Decision.Action)
		}
		w.t.inst.recoveries.Add(ctx, 1, metric.WithAttributes(attribute.String("acp_guard.outcome", string(r.Outcome)),
			attribute.String("acp_guard.decision.action", action), attribute.String("acp_guard.adapter", w.adapter())))
	}
	attrs := []attribute.KeyValue{
		attribute.String("acp_guard.outcome", string(r.Outcome)), attribute.String("acp_guard.adapter", w.adapter()),
		attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.provider.name", providerName(w.adapter())),
		attribute.String("gen_ai.request.model", tn.model),
	}
	if pe := r.ProviderError; pe != nil {
		attrs = append(attrs, attribute.String("error.type", pe.Code))
	}
	w.t.inst.turns.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attrs...))
	tn.span.End(trace.WithTimestamp(e.At))
}

// turnAttrs are a finished turn's span attributes: no text but the
// ProviderError's redacted excerpt.
func turnAttrs(r *event.TurnReport, model string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String("acp_guard.outcome", string(r.Outcome)),
		attribute.Int("acp_guard.attempts", max(r.Attempts, 1)),
		attribute.Int64("acp_guard.generation", r.Generation),
		attribute.Int("acp_guard.suppressed", r.Suppressed),
	}
	if model != "" {
		attrs = append(attrs, attribute.String("acp_guard.model", model), attribute.String("gen_ai.request.model", model))
	}
	if r.StopReason != "" {
		attrs = append(attrs, attribute.String("acp.stop_reason", r.StopReason))
	}
	if r.Silent != "" {
		attrs = append(attrs, attribute.String("acp_guard.silent", r.Silent))
	}
	if r.AgentRetries > 0 {
		attrs = append(attrs, attribute.Int("acp_guard.agent_retries", r.AgentRetries))
	}
	if pe := r.ProviderError; pe != nil && pe.Circuit != nil {
		attrs = append(attrs, attribute.String("acp_guard.circuit.key", pe.Circuit.Key), attribute.String("acp_guard.circuit.state", pe.Circuit.State))
	}
	if r.Error != nil {
		attrs = append(attrs, attribute.Int("rpc.jsonrpc.error_code", r.Error.Code))
	}
	if d := r.Decision; d != nil {
		attrs = append(attrs, attribute.String("acp_guard.decision.action", string(d.Action)), attribute.String("acp_guard.decision.reason", d.Reason))
	}
	if pe := r.ProviderError; pe != nil {
		attrs = append(attrs,
			attribute.String("error.type", pe.Code),
			attribute.String("acp_guard.error.code", pe.Code), attribute.String("acp_guard.error.class", pe.Class),
			attribute.String("acp_guard.error.rule", pe.Rule), attribute.String("acp_guard.error.confidence", pe.Confidence),
			attribute.String("acp_guard.error.source", pe.Source), attribute.Bool("acp_guard.replay_safe", pe.ReplaySafe),
			attribute.String("acp_guard.error.excerpt", pe.SafeExcerpt), attribute.String("acp_guard.catalogue_version", pe.CatalogueVersion))
	}
	return attrs
}

// requestID is the client's JSON-RPC id (a number or a short string).
func requestID(raw []byte) string {
	if len(raw) > 64 {
		return strconv.Itoa(len(raw)) + " bytes"
	}
	return string(raw)
}

// endOpen ends the spans of turns that never got an answer (the process
// is exiting).
func (w *worker) endOpen(now time.Time) {
	for _, tn := range w.turns {
		if tn.child != nil {
			tn.child.End(trace.WithTimestamp(now))
		}
		tn.span.SetAttributes(attribute.String("acp_guard.outcome", "unfinished"))
		tn.span.End(trace.WithTimestamp(now))
	}
	w.turns = map[string]*turn{}
}
