package guard_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// eventLog records the event stream as one line per event.
type eventLog struct {
	lines  []string
	events []guard.Event
}

func (l *eventLog) add(e guard.Event) {
	l.events = append(l.events, e)
	b := e.Base()
	var s string
	switch e := e.(type) {
	case guard.FrameObserved:
		s = fmt.Sprintf("frame %s %s %s id=%s bytes=%d update=%s route=%s proxy=%v", e.Dir, e.Kind, e.Method, e.ID, e.Bytes, e.Update, e.Route, e.Proxy)
	case guard.TurnStarted:
		s = fmt.Sprintf("turn started gen=%d model=%s traceparent=%s", e.Generation, e.Model, e.Trace.Traceparent)
	case guard.FailureClassified:
		s = fmt.Sprintf("failure %s attempt=%d model=%s code=%s safe=%v rpc=%v action=%s", e.Phase, e.Attempt, e.Model, e.Verdict.Code, e.ReplaySafe, e.Error, e.Decision.Action)
	case guard.Transition:
		s = fmt.Sprintf("transition %s -%s-> %s recorded=%s", e.From, e.On, e.To, e.Recorded)
	case guard.NoticeSent:
		deadline := "none"
		if !e.Deadline.IsZero() {
			deadline = "+" + e.Deadline.Sub(e.At).String()
		}
		s = fmt.Sprintf("notice %s delay=%s deadline=%s model=%s", e.Action, e.Delay, deadline, e.Model)
	case guard.AttemptSent:
		s = fmt.Sprintf("sent %s %s attempt=%d model=%s", e.Kind, e.Method, e.Attempt, e.Model)
	case guard.AttemptDone:
		s = fmt.Sprintf("done %s ok=%v rpc=%v stop=%s", e.Kind, e.OK, e.Error, e.StopReason)
	case guard.Answered:
		s = fmt.Sprintf("answered %s attempts=%d model=%s after=%s", e.Report.Outcome, e.Report.Attempts, e.Report.Model, e.Duration)
	default:
		s = fmt.Sprintf("%T", e)
	}
	l.lines = append(l.lines, fmt.Sprintf("+%s %s", b.At.Sub(epoch), s))
}

// without drops the frame lines.
func (l *eventLog) without(prefix string) []string {
	var out []string
	for _, s := range l.lines {
		if !strings.Contains(s, " "+prefix+" ") {
			out = append(out, s)
		}
	}
	return out
}

const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// recovery runs a prompt that fails twice on model-a, is retried once
// after 5 s, switched to model-b and answered there, with events (frames
// included) going to sub. It returns the model switch as the agent got it.
func recovery(t *testing.T, sub func(guard.Event)) string {
	t.Helper()
	doc := policy.Default()
	doc.Transient = policy.ClassPolicy{Retry: policy.Retry{Enabled: true, MaxRetries: 1, InitialIntervalSeconds: 5}, OnExhausted: policy.OutcomeSkip}
	h := &harness{t: t, v: transport.NewVirtual(epoch)}
	g := guard.New(guard.Config{Identity: observers.Identity{Flag: "claude-agent-acp"}, Engine: catalogue.Default(), Policy: doc,
		Fallback: []string{"model-b"}, Events: sub, Frames: true, TraceContext: true})
	h.r = transport.NewRelay(transport.Config{MaxLine: 1 << 20, Hooks: g}, h.v)
	h.client(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	h.agent(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1","models":{"availableModels":[{"modelId":"model-a","name":"A"},{"modelId":"model-b","name":"B"}],"currentModelId":"model-a"}}}`)
	h.client(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}],"_meta":{"traceparent":%q,"tracestate":"k=v"}}}`, tp)
	h.v.Advance(time.Second)
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	h.v.Advance(5 * time.Second)
	h.agent(`{"jsonrpc":"2.0","id":"acp-guard:1","error":%s}`, overloaded)
	sent := h.agentFrames()
	h.agent(`{"jsonrpc":"2.0","id":"acp-guard:2","result":{}}`)
	h.v.Advance(2 * time.Second)
	h.agent("%s", msgChunk("Answer from model-b."))
	h.agent(`{"jsonrpc":"2.0","id":"acp-guard:3","result":{"stopReason":"end_turn"}}`)
	return sent[len(sent)-1]
}

// A recovery through a retry and a model switch, as its event stream: in
// order, each event stamped with the virtual clock of the event that
// caused it, the agent's error decoded once and carried along, the
// prompt's trace context read and passed on with the model switch.
func TestEventStreamOfARecovery(t *testing.T) {
	log := &eventLog{}
	sw := recovery(t, log.add)
	if !strings.Contains(sw, `"method":"session/set_model"`) || !strings.Contains(sw, `"_meta":{"traceparent":"`+tp+`","tracestate":"k=v"}`) {
		t.Errorf("the model switch does not pass the prompt's trace context on: %s", sw)
	}
	want := []string{
		"+0s turn started gen=1 model=model-a traceparent=" + tp,
		"+1s failure prompt attempt=0 model=model-a code=provider_overloaded safe=true rpc=&{-32603 API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}} action=retry",
		"+1s transition active -retry-> retry_wait recorded=scheduled",
		"+1s notice retry delay=5s deadline=+5s model=",
		"+6s transition retry_wait -due-> retrying recorded=",
		"+6s sent retry session/prompt attempt=1 model=model-a",
		"+6s done retry ok=false rpc=&{-32603 API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}} stop=",
		"+6s failure prompt attempt=1 model=model-a code=provider_overloaded safe=true rpc=&{-32603 API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}} action=skip",
		"+6s transition retrying -skip-> switching recorded=failed",
		"+6s notice switch delay=0s deadline=none model=model-b",
		"+6s sent switch session/set_model attempt=1 model=model-b",
		"+6s done switch ok=true rpc=<nil> stop=",
		"+6s transition switching -switched-> retrying recorded=",
		"+6s sent retry session/prompt attempt=2 model=model-b",
		"+8s done retry ok=true rpc=<nil> stop=end_turn",
		"+8s transition retrying -succeed-> answered recorded=succeeded",
		"+8s answered retried attempts=3 model=model-b after=8s",
	}
	if got := log.without("frame"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Frames say where each went, never what it held.
	frames := []string{}
	for _, s := range log.lines {
		if strings.Contains(s, " frame ") {
			frames = append(frames, s)
		}
	}
	wantFrames := []string{
		"+0s frame c2a request session/new id=1 bytes=88 update= route=forward proxy=false",
		"+0s frame a2c response  id=1 bytes=177 update= route=forward proxy=false",
		"+0s frame c2a request session/prompt id=2 bytes=219 update= route=forward proxy=false",
		"+1s frame a2c response  id=2 bytes=166 update= route=hold proxy=false",
		"+6s frame a2c response  id=\"acp-guard:1\" bytes=178 update= route=drop proxy=true",
		"+6s frame a2c response  id=\"acp-guard:2\" bytes=49 update= route=drop proxy=true",
		"+8s frame a2c notification session/update id= bytes=177 update=agent_message_chunk route=forward proxy=false",
		"+8s frame a2c response  id=\"acp-guard:3\" bytes=72 update= route=drop proxy=true",
	}
	if strings.Join(frames, "\n") != strings.Join(wantFrames, "\n") {
		t.Errorf("frames:\n%s\nwant:\n%s", strings.Join(frames, "\n"), strings.Join(wantFrames, "\n"))
	}
	for _, e := range log.events {
		if b := e.Base(); b.Agent != "claude-agent-acp" {
			t.Errorf("%T: agent %q", e, b.Agent)
		}
	}
}

// A subscriber that does not take frames costs nothing per frame: no
// event is built for a streamed chunk.
func TestEventsCostNothingPerFrame(t *testing.T) {
	for _, tt := range []struct {
		name   string
		frames bool
		want   float64
	}{{"decisions only", false, 0}, {"frames", true, 1}} {
		n := 0
		g := guard.New(guard.Config{Identity: observers.Identity{Flag: "codex-acp"}, Engine: catalogue.Default(), Policy: policy.Default(),
			Events: func(guard.Event) { n++ }, Frames: tt.frames})
		r := transport.NewRelay(transport.Config{MaxLine: 1 << 20, Hooks: g}, &discard{})
		r.FromClient(transport.Line{Bytes: []byte(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}` + "\n")})
		line := []byte(msgChunk("Some ordinary text of a streamed answer.") + "\n")
		before := n
		allocs := testing.AllocsPerRun(100, func() { r.FromAgent(transport.Line{Bytes: line}) })
		if allocs != tt.want {
			t.Errorf("%s: %v allocations per chunk, want %v", tt.name, allocs, tt.want)
		}
		if events := n - before; tt.frames != (events > 0) {
			t.Errorf("%s: %d events for 101 chunks", tt.name, events)
		}
	}
}

// The decision log: each decision a line with pid, agent, session and the
// client's id, durations in milliseconds; at debug, one line per frame
// with its direction, kind, method, id and size — never its content.
func TestLogEvents(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	recovery(t, guard.LogEvents(log))
	byMsg := map[string][]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		byMsg[m["msg"].(string)] = append(byMsg[m["msg"].(string)], m)
		if m["pid"] != float64(os.Getpid()) || m["agent"] != "claude-agent-acp" {
			t.Errorf("line without pid and agent: %s", line)
		}
		// The one provider text allowed: a classified failure's safe
		// excerpt, at debug (this log's level).
		rest := line
		if ex, ok := m["excerpt"].(string); ok {
			if m["msg"] != "failure classified" || !strings.Contains(ex, "Overloaded") {
				t.Errorf("excerpt %q on a %q line", ex, m["msg"])
			}
			b, _ := json.Marshal(ex)
			rest = strings.Replace(line, string(b), `""`, 1)
		}
		for _, content := range []string{"Answer from model-b", `"hi"`, "Overloaded"} {
			if strings.Contains(rest, content) {
				t.Errorf("content %q in the log: %s", content, line)
			}
		}
	}
	for msg, n := range map[string]int{"failure classified": 2, "recovery transition": 5, "retry sent": 2, "switch sent": 1,
		"notice sent": 2, "turn settled": 1, "frame": 8} {
		if got := len(byMsg[msg]); got != n {
			t.Errorf("%q lines: got %d, want %d", msg, got, n)
		}
	}
	for _, m := range append(byMsg["failure classified"], byMsg["turn settled"]...) {
		if m["session"] != "s1" || m["id"] != "2" {
			t.Errorf("decision line without session and id: %v", m)
		}
	}
	for _, m := range byMsg["failure classified"] {
		if m["code"] != "provider_overloaded" || m["class"] != "transient" || m["rule"] != "anthropic.overloaded_error.v1" || m["excerpt"] == nil {
			t.Errorf("failure line without its verdict and excerpt: %v", m)
		}
	}
	// At info, the verdict without the provider's text.
	var info strings.Builder
	recovery(t, guard.LogEvents(slog.New(slog.NewJSONHandler(&info, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	if strings.Contains(info.String(), "Overloaded") || !strings.Contains(info.String(), `"rule":"anthropic.overloaded_error.v1"`) {
		t.Errorf("info log:\n%s\nwant the verdict's rule and no excerpt", info.String())
	}
	if tr := byMsg["recovery transition"]; len(tr) > 0 && tr[0]["delay_ms"] != float64(5000) {
		t.Errorf("first transition: delay_ms %v, want 5000", tr[0]["delay_ms"])
	}
	if ts := byMsg["turn settled"]; len(ts) == 1 && ts[0]["duration_ms"] != float64(8000) {
		t.Errorf("turn settled: duration_ms %v, want 8000", ts[0]["duration_ms"])
	}
	if f := byMsg["frame"]; len(f) > 3 && (f[2]["method"] != "session/prompt" || f[2]["frame_id"] != "2" || f[2]["dir"] != "c2a" || f[2]["bytes"] != float64(219)) {
		t.Errorf("the prompt's frame line: %v", f[2])
	}
}
