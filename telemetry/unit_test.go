//go:build !nootel

package telemetry

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
)

func TestFromEnv(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     map[string]string
		flag    bool
		on      bool
		want    Settings
		wantErr bool
	}{
		{name: "nothing set", env: nil, on: false},
		{name: "flag", flag: true, on: true, want: Settings{Traces: true, Metrics: true, TraceProto: ProtoHTTP, MetricProto: ProtoHTTP, SessionID: SessionHash, Flush: MaxFlush}},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, on: true, want: Settings{Traces: true, Metrics: true, TraceProto: ProtoHTTP, MetricProto: ProtoHTTP, SessionID: SessionHash, Flush: MaxFlush}},
		{name: "traces only", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, on: true, want: Settings{Traces: true, TraceProto: ProtoHTTP, MetricProto: ProtoHTTP, SessionID: SessionHash, Flush: MaxFlush}},
		{name: "metrics only, grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, on: grpcBuilt, wantErr: !grpcBuilt, want: Settings{Metrics: true, TraceProto: ProtoGRPC, MetricProto: ProtoGRPC, SessionID: SessionHash, Flush: MaxFlush}},
		{name: "per-signal protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/protobuf"}, on: grpcBuilt, wantErr: !grpcBuilt, want: Settings{Traces: true, Metrics: true, TraceProto: ProtoGRPC, MetricProto: ProtoHTTP, SessionID: SessionHash, Flush: MaxFlush}},
		{name: "exporter none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_TRACES_EXPORTER": "none"}, on: true, want: Settings{Metrics: true, TraceProto: ProtoHTTP, MetricProto: ProtoHTTP, SessionID: SessionHash, Flush: MaxFlush}},
		{name: "sdk disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_SDK_DISABLED": "true"}, flag: true, on: false},
		{name: "raw session ids", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "ACP_GUARD_OTEL_SESSION_ID": "raw"}, on: true, want: Settings{Traces: true, Metrics: true, TraceProto: ProtoHTTP, MetricProto: ProtoHTTP, SessionID: SessionRaw, Flush: MaxFlush}},
		{name: "http/json", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: true},
		{name: "bad protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"}, wantErr: true},
		{name: "short timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_TIMEOUT": "250"}, on: true,
			want: Settings{Traces: true, Metrics: true, TraceProto: ProtoHTTP, MetricProto: ProtoHTTP, SessionID: SessionHash, Flush: 250 * time.Millisecond}},
		{name: "long timeout: still MaxFlush", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_TIMEOUT": "10000"}, on: true,
			want: Settings{Traces: true, Metrics: true, TraceProto: ProtoHTTP, MetricProto: ProtoHTTP, SessionID: SessionHash, Flush: MaxFlush}},
		{name: "per-signal timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_TIMEOUT": "900", "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT": "100"}, on: true,
			want: Settings{Traces: true, Metrics: true, TraceProto: ProtoHTTP, MetricProto: ProtoHTTP, SessionID: SessionHash, Flush: 100 * time.Millisecond}},
		{name: "bad timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_TIMEOUT": "1s"}, wantErr: true},
		{name: "bad session mode", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "ACP_GUARD_OTEL_SESSION_ID": "plain"}, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, on, err := FromEnv(func(k string) string { return tt.env[k] }, tt.flag)
			if (err != nil) != tt.wantErr || on != tt.on {
				t.Fatalf("got on=%v err=%v, want on=%v err=%v", on, err, tt.on, tt.wantErr)
			}
			got.Getenv = nil // FromEnv's getenv, passed on to the exporters
			if on && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// In a build without -tags otlpgrpc, asking for OTLP over gRPC is an
// error that names the variable and the build tag: the caller logs it and
// runs the agent without telemetry.
func TestGRPCNotBuiltNamesTheVariable(t *testing.T) {
	if grpcBuilt {
		t.Skip("this build has OTLP/gRPC (-tags otlpgrpc)")
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}
	_, on, err := FromEnv(func(k string) string { return env[k] }, false)
	if on || err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") || !strings.Contains(err.Error(), "-tags otlpgrpc") {
		t.Errorf("got on=%v err=%v, want off with an error naming OTEL_EXPORTER_OTLP_TRACES_PROTOCOL and -tags otlpgrpc", on, err)
	}
}

// The relay goroutine never waits for the telemetry: with the worker
// stuck, every event past the queue's capacity is dropped and counted.
// After Close nothing is counted: the session is over (a crash's last
// events are not "dropped").
func TestEmitNeverBlocks(t *testing.T) {
	tel := &Telemetry{queue: make(chan event.Event, 8)} // no worker reads it
	for i := 0; i < 1000; i++ {
		tel.Event(event.Answered{Report: event.TurnReport{Outcome: guard.OutcomePassed}})
	}
	if got := tel.Dropped(); got != 1000-8 {
		t.Errorf("dropped: got %d, want %d", got, 1000-8)
	}
	tel.closed.Store(true)
	tel.Event(event.Answered{})
	if got := tel.Dropped(); got != 1000-8 {
		t.Errorf("after close: got %d dropped, want %d", got, 1000-8)
	}
}

// A flagged success and a circuit's stop reach the span as attributes.
func TestTurnAttrsSilentAndCircuit(t *testing.T) {
	r := &event.TurnReport{Outcome: guard.OutcomeFailed, Silent: "empty",
		ProviderError: &event.ProviderError{Code: "provider_overloaded", Class: "transient",
			Circuit: &circuit.Snapshot{Key: "default/codex-acp/m/provider", State: "open"}}}
	got := map[string]string{}
	for _, kv := range turnAttrs(r, "") {
		got[string(kv.Key)] = kv.Value.Emit()
	}
	for k, want := range map[string]string{"acp_guard.silent": "empty", "acp_guard.circuit.key": "default/codex-acp/m/provider", "acp_guard.circuit.state": "open"} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}

// The worker turns the event stream into the turn's span: an operator's
// action on a held prompt is an acp_guard.action span event, and the
// transition it causes says who asked.
func TestActionSpanEvent(t *testing.T) {
	exp := keptSpans{tracetest.NewInMemoryExporter()}
	tel := &Telemetry{log: slog.New(slog.DiscardHandler), set: Settings{Traces: true, Flush: MaxFlush},
		queue: make(chan event.Event, 16), done: make(chan struct{}), exited: make(chan struct{}), spanExp: exp}
	tel.w = newWorker(tel, observers.Identity{Flag: "codex-acp"})
	go tel.run() // ends at Close
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	b := event.EventBase{At: at, Agent: "codex-acp", SessionID: "s1", RequestID: []byte("3")}
	tel.Event(event.TurnStarted{EventBase: b})
	b.At = at.Add(time.Second)
	tel.Event(event.RecoveryAction{EventBase: b, Action: "retry_now", By: "operator", From: "retry_wait", To: "retrying"})
	tel.Event(event.Transition{EventBase: b, From: "retry_wait", On: "retry_now", To: "retrying", By: "operator"})
	b.At = at.Add(2 * time.Second)
	tel.Event(event.Answered{EventBase: b, Report: event.TurnReport{Outcome: guard.OutcomeRetried, Attempts: 2}, Duration: 2 * time.Second})
	if err := tel.Close(context.Background(), Frames{}); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("spans: %d, want the turn's", len(spans))
	}
	got := map[string]map[string]string{}
	for _, e := range spans[0].Events {
		a := map[string]string{}
		for _, kv := range e.Attributes {
			a[string(kv.Key)] = kv.Value.Emit()
		}
		got[e.Name] = a
	}
	if a := got["acp_guard.action"]; a["acp_guard.action"] != "retry_now" || a["acp_guard.by"] != "operator" || a["acp_guard.to"] != "retrying" {
		t.Errorf("action event: %v", a)
	}
	if a := got["acp_guard.transition"]; a["acp_guard.by"] != "operator" || a["acp_guard.event"] != "retry_now" {
		t.Errorf("transition event: %v", a)
	}
	if d := spans[0].EndTime.Sub(spans[0].StartTime); d != 2*time.Second {
		t.Errorf("span from the event stamps: %s, want 2s", d)
	}
}

// keptSpans is an in-memory exporter whose spans outlive its Shutdown.
type keptSpans struct{ *tracetest.InMemoryExporter }

func (keptSpans) Shutdown(context.Context) error { return nil }
