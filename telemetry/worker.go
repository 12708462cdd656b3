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
	"go.opentelemetry.io/otel/trace"

	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// worker turns events into spans and metric points. Only the worker
// goroutine (Telemetry.run) touches it, and Close after that goroutine
// returned.
type worker struct {
	t        *Telemetry
	identity observers.Identity
	models   map[string]string // session → current model
	hashes   map[string]string // session → its hashed id (computed once)
	turns    map[transport.IDKey]*turn
	bySess   map[string]*turn // session → its turn in flight (one per session)
	proxies  map[transport.IDKey]*proxyReq
	// counted holds the failed attempts already counted, per client
	// request, so that a later decision about the same failure (or a
	// record arriving after its turn's report) is not counted twice.
	// Entries go with the turn's report plus a grace of countedKeep turns.
	counted map[transport.IDKey]map[int]bool
	order   []transport.IDKey
}

// countedKeep is how many settled turns keep their counted attempts.
const countedKeep = 64

// turn is one client prompt in flight.
type turn struct {
	key      transport.IDKey
	session  string
	start    time.Time
	ctx      context.Context // holds the turn span
	span     trace.Span
	model    string
	lastDone time.Time // when the latest attempt was answered: a wait starts there
	waitMs   int64     // the delay the guard announced for the next attempt
	waiting  bool      // the guard scheduled a delayed retry or a reset wait
	class    string
}

type proxyReq struct {
	span   trace.Span
	method string
	model  string
	tn     *turn
}

func newWorker(t *Telemetry, id observers.Identity) *worker {
	return &worker{t: t, identity: id, models: map[string]string{}, hashes: map[string]string{}, turns: map[transport.IDKey]*turn{},
		bySess: map[string]*turn{}, proxies: map[transport.IDKey]*proxyReq{}, counted: map[transport.IDKey]map[int]bool{}}
}

func (w *worker) adapter() string {
	a, _ := w.identity.Resolve()
	return a
}

func (w *worker) handle(e event) {
	switch e.kind {
	case evAdapter:
		w.identity.AgentInfo = e.value
	case evModel:
		w.models[e.session] = e.value
	case evPrompt:
		w.prompt(e)
	case evAnswer:
		if tn := w.turns[e.key]; tn != nil {
			tn.lastDone = e.at
		}
	case evCall:
		w.call(e)
	case evProxyDone:
		w.proxyDone(e)
	case evNotice:
		w.notice(e)
	case evAttempt:
		w.attempt(e)
	case evTurn:
		w.report(e)
	case evLate:
		adapter := e.value
		if adapter == "" {
			adapter = w.adapter()
		}
		w.t.inst.late.Add(context.Background(), e.delayMs, metric.WithAttributes(attribute.String("adapter", adapter)))
	}
}

func (w *worker) prompt(e event) {
	tn := &turn{key: e.key, session: e.session, start: e.at, model: w.models[e.session]}
	attrs := []attribute.KeyValue{attribute.String("acp_guard.adapter", w.adapter())}
	if sid, ok := w.sessionAttr(e.session); ok {
		attrs = append(attrs, sid)
	}
	tn.ctx, tn.span = w.t.tracer.Start(context.Background(), "acp.session/prompt",
		trace.WithTimestamp(e.at), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	w.turns[e.key] = tn
	w.bySess[e.session] = tn
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

// call starts a child span for the proxy's own request: a retry
// (session/prompt) or a model switch. A retry after a failed attempt
// closes the wait between them.
func (w *worker) call(e event) {
	tn := w.bySess[e.session]
	if tn == nil {
		return
	}
	name := "acp_guard.retry"
	attrs := []attribute.KeyValue{attribute.String("rpc.method", e.method)}
	switch e.method {
	case "session/prompt":
		if tn.waiting && !tn.lastDone.IsZero() {
			w.wait(tn, tn.lastDone, e.at)
		}
		tn.waiting = false
	case "session/set_model", "session/set_config_option":
		name = "acp_guard.switch_model"
		attrs = append(attrs, attribute.String("acp_guard.model", e.value))
	}
	_, span := w.t.tracer.Start(tn.ctx, name, trace.WithTimestamp(e.at), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	w.proxies[e.key] = &proxyReq{span: span, method: e.method, model: e.value, tn: tn}
}

// wait records the time between a failed attempt and the next one.
func (w *worker) wait(tn *turn, from, to time.Time) {
	_, span := w.t.tracer.Start(tn.ctx, "acp_guard.wait", trace.WithTimestamp(from),
		trace.WithAttributes(attribute.Int64("acp_guard.wait.announced_ms", tn.waitMs)))
	span.End(trace.WithTimestamp(to))
	w.t.inst.waits.Record(context.Background(), to.Sub(from).Seconds(), metric.WithAttributes(attribute.String("class", tn.class)))
	tn.waitMs = 0
}

func (w *worker) proxyDone(e event) {
	p := w.proxies[e.key]
	if p == nil {
		return
	}
	delete(w.proxies, e.key)
	if !e.ok {
		p.span.SetStatus(codes.Error, "agent error")
		p.span.SetAttributes(attribute.Int64("rpc.jsonrpc.error_code", e.rpcCode))
	}
	p.span.End(trace.WithTimestamp(e.at))
	switch p.method {
	case "session/prompt":
		p.tn.lastDone = e.at
	case "session/set_model", "session/set_config_option":
		result := "ok"
		if e.ok {
			p.tn.model = p.model
		} else {
			result = "refused"
		}
		w.t.inst.switches.Add(context.Background(), 1, metric.WithAttributes(attribute.String("model", p.model), attribute.String("result", result)))
	}
}

func (w *worker) notice(e event) {
	w.t.inst.notices.Add(context.Background(), 1, metric.WithAttributes(attribute.String("action", e.value)))
	if tn := w.bySess[e.session]; tn != nil {
		tn.waitMs = e.delayMs
		tn.span.AddEvent("acp_guard.notice", trace.WithTimestamp(e.at), trace.WithAttributes(
			attribute.String("acp_guard.action", e.value), attribute.Int64("acp_guard.delay_ms", e.delayMs)))
	}
}

// attempt is one decision of the guard: an event on the turn span and,
// once per failed attempt, a provider failure.
func (w *worker) attempt(e event) {
	r := e.rec
	tn := w.turns[e.key]
	model := w.models[e.session]
	if tn != nil {
		model = tn.model
		tn.class = r.Class
		tn.waiting = r.Outcome == policy.AttemptScheduled
		tn.span.AddEvent("acp_guard.decision", trace.WithTimestamp(r.Time), trace.WithAttributes(
			attribute.Int("acp_guard.attempt", r.Attempt), attribute.String("acp_guard.outcome", string(r.Outcome)),
			attribute.String("acp_guard.error.code", r.Code), attribute.String("acp_guard.error.class", r.Class),
			attribute.String("acp_guard.error.rule", r.Rule), attribute.String("acp_guard.decision.action", string(r.Decision.Action)),
			attribute.String("acp_guard.decision.reason", r.Decision.Reason), attribute.Int64("acp_guard.decision.delay_ms", r.Decision.DelayMs)))
	}
	if r.Code == "" || r.Outcome == policy.AttemptSucceeded || r.Outcome == policy.AttemptCancelled {
		return
	}
	if !w.countOnce(e.key, r.Attempt) {
		return // a later decision about a failure already counted
	}
	w.failure(r.Code, r.Class, model)
}

// countOnce reports whether attempt of the request key is counted now for
// the first time.
func (w *worker) countOnce(key transport.IDKey, attempt int) bool {
	m := w.counted[key]
	if m == nil {
		m = map[int]bool{}
		w.counted[key] = m
		w.order = append(w.order, key)
		if len(w.order) > countedKeep+len(w.turns) {
			delete(w.counted, w.order[0])
			w.order = w.order[1:]
		}
	}
	if m[attempt] {
		return false
	}
	m[attempt] = true
	return true
}

func (w *worker) failure(code, class, model string) {
	w.t.inst.failures.Add(context.Background(), 1, metric.WithAttributes(attribute.String("code", code),
		attribute.String("class", class), attribute.String("adapter", w.adapter()), attribute.String("model", model)))
}

// report ends the turn's span with what the guard decided.
func (w *worker) report(e event) {
	r := e.report
	tn := w.turns[e.key]
	if tn == nil {
		return
	}
	delete(w.turns, e.key)
	if w.bySess[tn.session] == tn {
		delete(w.bySess, tn.session)
	}
	if pe := r.ProviderError; pe != nil && pe.Model != "" {
		tn.model = pe.Model
	}
	if r.Model != "" {
		tn.model = r.Model
	}
	if r.Silent != "" {
		w.t.inst.silent.Add(context.Background(), 1, metric.WithAttributes(attribute.String("kind", r.Silent), attribute.String("adapter", w.adapter())))
	}
	if pe := r.ProviderError; pe != nil && pe.Circuit != nil {
		w.t.inst.circuits.Add(context.Background(), 1, metric.WithAttributes(attribute.String("state", pe.Circuit.State)))
	}
	attrs := turnAttrs(r, tn.model)
	tn.span.SetAttributes(attrs...)
	if r.Outcome != guard.OutcomePassed && r.Outcome != guard.OutcomeRetried {
		tn.span.SetStatus(codes.Error, r.Outcome)
	}
	if pe := r.ProviderError; pe != nil && w.countOnce(e.key, max(r.Attempts, 1)-1) {
		// No attempt record counted the final failure (there is no
		// attempt log, or its record comes later and is then skipped).
		w.failure(pe.Code, pe.Class, tn.model)
	}
	if r.Attempts > 1 || (r.Decision != nil && r.Decision.Action != policy.ActionStop && r.Decision.Action != "none") {
		action := ""
		if r.Decision != nil {
			action = string(r.Decision.Action)
		}
		w.t.inst.recoveries.Add(context.Background(), 1, metric.WithAttributes(attribute.String("outcome", r.Outcome), attribute.String("action", action)))
	}
	w.t.inst.turns.Record(context.Background(), e.at.Sub(tn.start).Seconds(), metric.WithAttributes(
		attribute.String("outcome", r.Outcome), attribute.String("adapter", w.adapter()), attribute.String("model", tn.model)))
	tn.span.End(trace.WithTimestamp(e.at))
}

// turnAttrs are a finished turn's span attributes: no text but the
// ProviderError's redacted excerpt.
func turnAttrs(r *guard.TurnReport, model string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String("acp_guard.outcome", r.Outcome),
		attribute.Int("acp_guard.attempts", max(r.Attempts, 1)),
		attribute.Int64("acp_guard.generation", r.Generation),
		attribute.Int("acp_guard.suppressed", r.Suppressed),
		attribute.String("acp_guard.request_id", requestID(r.RequestID)),
	}
	if model != "" {
		attrs = append(attrs, attribute.String("acp_guard.model", model))
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

// endOpen ends the spans of turns that never got a report (the process is
// exiting).
func (w *worker) endOpen(now time.Time) {
	for _, p := range w.proxies {
		p.span.End(trace.WithTimestamp(now))
	}
	for _, tn := range w.turns {
		tn.span.SetAttributes(attribute.String("acp_guard.outcome", "unfinished"))
		tn.span.End(trace.WithTimestamp(now))
	}
}
