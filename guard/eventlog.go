package guard

import (
	"context"
	"log/slog"
	"os"
	"time"
)

// LogEvents returns the subscriber that writes the event stream as the
// decision log: one line per decision at info (a classified failure, a
// transition, a request of acp-guard's own, a notice, an answered turn, a
// circuit's decision), warnings for silent failures, abnormal stops,
// stalls and refused model switches, and — at debug, when the guard emits
// them (Config.Frames) — one line per frame saying where it went: its
// direction, kind, method, id and size, never its content. A classified
// failure's line names the verdict (code, class, rule) and the decision;
// at debug it also carries the verdict's safe excerpt (redacted provider
// text, the ProviderError's safeExcerpt), the only provider text the log
// holds. Every line
// carries pid (this process), agent (the adapter) and, when the event is
// about one, session and id (the client's request); durations are in
// milliseconds (keys ending in _ms).
func LogEvents(log *slog.Logger) func(Event) {
	l := eventLog{log: log, pid: os.Getpid()}
	return l.event
}

type eventLog struct {
	log *slog.Logger
	pid int
}

// line writes one line with the identity of b first.
func (l eventLog) line(level slog.Level, msg string, b EventBase, attrs ...slog.Attr) {
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return
	}
	all := make([]slog.Attr, 0, len(attrs)+4)
	all = append(all, slog.Int("pid", l.pid), slog.String("agent", b.Agent))
	if b.SessionID != "" {
		all = append(all, slog.String("session", b.SessionID))
	}
	if b.RequestID != nil {
		all = append(all, slog.String("id", string(b.RequestID)))
	}
	l.log.LogAttrs(ctx, level, msg, append(all, attrs...)...)
}

// msAttr is a duration in milliseconds.
func msAttr(key string, d time.Duration) slog.Attr { return slog.Int64(key, d.Milliseconds()) }

func (l eventLog) event(e Event) {
	switch e := e.(type) {
	case FrameObserved:
		l.frame(e)
	case TurnStarted:
		l.line(slog.LevelDebug, "turn started", e.EventBase, slog.Int64("generation", e.Generation), slog.String("model", e.Model))
	case FailureClassified:
		l.failure(e)
	case Transition:
		attrs := []slog.Attr{slog.String("from", e.From), slog.String("event", e.On), slog.String("to", e.To),
			slog.Int("attempt", e.Attempt), slog.String("reason", e.Decision.Reason), msAttr("delay_ms", e.Decision.Delay)}
		if e.By != "" {
			attrs = append(attrs, slog.String("by", e.By))
		}
		l.line(slog.LevelInfo, "recovery transition", e.EventBase, attrs...)
	case AttemptSent:
		l.line(slog.LevelInfo, e.Kind+" sent", e.EventBase, slog.String("method", e.Method), slog.Int("attempt", e.Attempt), slog.String("model", e.Model))
	case AttemptDone:
		l.done(e)
	case NoticeSent:
		l.line(slog.LevelInfo, "notice sent", e.EventBase, slog.String("action", e.Action), msAttr("delay_ms", e.Delay),
			slog.String("code", e.Code), slog.String("text", e.Text))
	case Answered:
		l.answered(e)
	case SilentFlagged:
		l.line(slog.LevelWarn, "silent failure", e.EventBase, slog.String("kind", e.Silent.Kind))
	case AbnormalStop:
		l.line(slog.LevelWarn, "abnormal stop reason", e.EventBase, slog.String("stopReason", e.StopReason), slog.String("code", e.Note.Code))
	case CircuitDecision:
		level := slog.LevelInfo
		if e.Decision == CircuitGo || e.Decision == CircuitPark {
			level = slog.LevelDebug
		}
		// "circuit probe", "circuit park", …: the messages dev/fleet/ counts.
		l.line(level, "circuit "+e.Decision, e.EventBase, slog.String("key", e.Key),
			slog.String("model", e.Model), slog.String("state", e.Circuit.State), msAttr("wait_ms", max(e.Until.Sub(e.At), 0)))
	case CircuitChanged:
		l.line(slog.LevelInfo, "circuit reported", e.EventBase, slog.String("op", e.Op), slog.String("key", e.Circuit.Key),
			slog.String("state", e.Circuit.State))
	case LateOutput:
		l.line(slog.LevelWarn, "late output", e.EventBase, slog.Int("chunks", e.Chunks))
	case RecoveryAction:
		attrs := []slog.Attr{slog.String("action", e.Action), slog.String("by", e.By), slog.String("from", e.From), slog.String("to", e.To)}
		msg := "recovery action"
		if e.Refused != "" {
			msg = "recovery action refused"
			attrs = append(attrs, slog.String("err", e.Refused))
		}
		l.line(slog.LevelInfo, msg, e.EventBase, attrs...)
	case Stalled:
		l.line(slog.LevelWarn, "agent stalled; session/cancel sent", e.EventBase, msAttr("idle_ms", e.Idle), slog.String("last", e.LastFrame))
	case AgentIdentified:
		l.line(slog.LevelInfo, "adapter identified", e.EventBase, slog.String("from", e.Source), slog.String("name", e.Name), slog.String("version", e.Version))
	}
}

func (l eventLog) frame(e FrameObserved) {
	attrs := []slog.Attr{slog.String("dir", e.Dir), slog.String("kind", e.Kind), slog.Int("bytes", e.Bytes), slog.String("route", e.Route)}
	if e.Method != "" {
		attrs = append(attrs, slog.String("method", e.Method))
	}
	if e.ID != nil {
		attrs = append(attrs, slog.String("frame_id", escapeID(e.ID)))
	}
	if e.Update != "" {
		attrs = append(attrs, slog.String("update", e.Update))
	}
	if e.Proxy {
		attrs = append(attrs, slog.Bool("proxy", true))
	}
	l.line(slog.LevelDebug, "frame", e.EventBase, attrs...)
}

// escapeID bounds a frame's id for a log line (an id is a number or a
// string; anything longer than 64 bytes is cut).
func escapeID(id []byte) string {
	if len(id) > 64 {
		return string(id[:64]) + "…"
	}
	return string(id)
}

func (l eventLog) failure(e FailureClassified) {
	v := e.Verdict
	attrs := []slog.Attr{slog.String("phase", e.Phase), slog.Int("attempt", e.Attempt), slog.String("code", v.Code),
		slog.String("class", string(v.Class)), slog.String("rule", v.Rule), slog.Bool("replay_safe", e.ReplaySafe),
		slog.String("action", string(e.Decision.Action)), slog.String("reason", e.Decision.Reason)}
	if e.Model != "" {
		attrs = append(attrs, slog.String("model", e.Model))
	}
	if e.Error != nil {
		attrs = append(attrs, slog.Int("rpc_code", e.Error.Code))
	}
	// What the provider said, as the client's ProviderError carries it
	// (safeExcerpt: bounded, redacted): provider text, so at debug only.
	if v.SafeExcerpt != "" && l.log.Enabled(context.Background(), slog.LevelDebug) {
		attrs = append(attrs, slog.String("excerpt", v.SafeExcerpt))
	}
	l.line(slog.LevelInfo, "failure classified", e.EventBase, attrs...)
}

func (l eventLog) done(e AttemptDone) {
	level, msg := slog.LevelDebug, e.Kind+" answered"
	attrs := []slog.Attr{slog.String("method", e.Method), slog.Int("attempt", e.Attempt), slog.Bool("ok", e.OK)}
	if e.Kind == AttemptSwitch && !e.OK {
		level, msg = slog.LevelWarn, "model switch refused"
		attrs = append(attrs, slog.String("model", e.Model))
	}
	if e.NotSent != "" {
		attrs = append(attrs, slog.String("not_sent", e.NotSent))
	}
	if e.Error != nil {
		attrs = append(attrs, slog.Int("rpc_code", e.Error.Code))
	}
	l.line(level, msg, e.EventBase, attrs...)
}

func (l eventLog) answered(e Answered) {
	r := &e.Report
	attrs := []slog.Attr{slog.String("outcome", string(r.Outcome)), slog.Int("attempts", max(r.Attempts, 1)), msAttr("duration_ms", e.Duration)}
	if r.Model != "" {
		attrs = append(attrs, slog.String("model", r.Model))
	}
	if r.StopReason != "" {
		attrs = append(attrs, slog.String("stopReason", r.StopReason))
	}
	if r.AgentRetries > 0 {
		attrs = append(attrs, slog.Int("agent_retries", r.AgentRetries))
	}
	if pe := r.ProviderError; pe != nil {
		attrs = append(attrs, slog.String("code", pe.Code), slog.String("class", pe.Class), slog.String("rule", pe.Rule),
			slog.String("action", pe.Recovery.Action), slog.String("reason", pe.Recovery.Reason))
	}
	l.line(slog.LevelInfo, "turn settled", e.EventBase, attrs...)
}
