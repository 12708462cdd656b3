package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/replay"
	"github.com/acp-guard/acp-guard/transport"
)

func mustPolicy(t *testing.T, doc string) *policy.Document {
	t.Helper()
	p, err := policy.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return &p
}

// Whether an attempt log is kept follows from the configuration in one
// place: whenever the pipeline can schedule work of its own (retry, wait,
// switch, compaction) or turn an empty turn into a failure, or a state
// directory is named — and, for a recorded session, whenever the live
// proxy kept one.
func TestSettleAttemptLog(t *testing.T) {
	meta := func(kind string) []replay.Event {
		return []replay.Event{{Dir: replay.DirMeta, AttemptLog: kind}}
	}
	for _, tt := range []struct {
		name   string
		cfg    Options
		o      Origin
		keep   bool
		defers bool
	}{
		{"default policy", Options{}, Origin{Argv: []string{"a"}}, false, false},
		{"default policy, state dir named", Options{StateDir: "/x"}, Origin{Argv: []string{"a"}}, true, false},
		{"retry", Options{Policy: mustPolicy(t, `{"version":1,"transient":{"retry":{"enabled":true,"max_retries":1,"initial_interval_seconds":1}}}`)}, Origin{Argv: []string{"a"}}, true, false},
		{"wait for reset", Options{Policy: mustPolicy(t, `{"version":1,"hard":{"wait_for_reset":{"enabled":true,"max_wait_seconds":60}}}`)}, Origin{Argv: []string{"a"}}, true, false},
		{"fallback models", Options{Fallback: []string{"m"}}, Origin{Argv: []string{"a"}}, true, false},
		{"compaction only", Options{Policy: mustPolicy(t, `{"version":1,"request":{"compact_then_retry":true}}`)}, Origin{Argv: []string{"a"}}, true, false},
		{"empty turn error", Options{Policy: mustPolicy(t, `{"version":1,"empty_turn":"error"}`)}, Origin{Argv: []string{"a"}}, true, false},
		{"stall only", Options{Policy: mustPolicy(t, `{"version":1,"stall_timeout_seconds":5}`)}, Origin{Argv: []string{"a"}}, false, false},
		{"recorded with a log", Options{}, Origin{Recorded: true, Events: meta("dir")}, true, true},
		{"recorded with a log, other policy", Options{Policy: mustPolicy(t, `{"version":1}`)}, Origin{Recorded: true, Events: meta("dir")}, true, false},
		{"recorded without", Options{}, Origin{Recorded: true, Events: meta("")}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var pl Pipeline
			s, err := pl.settle(&tt.cfg, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if s.keepLog != tt.keep || s.deferLog != tt.defers {
				t.Errorf("keepLog %v deferLog %v, want %v %v", s.keepLog, s.deferLog, tt.keep, tt.defers)
			}
		})
	}
}

// What the configuration leaves unset comes from the recording; circuits
// are ephemeral for recorded sessions unless the configuration names a
// store, and off when the recording ran without them.
func TestSettleRecorded(t *testing.T) {
	retry := `{"version":1,"transient":{"retry":{"enabled":true,"max_retries":1,"initial_interval_seconds":1}},"stall_timeout_seconds":7}`
	rec := func(m replay.Event) Origin {
		m.Dir, m.Policy = replay.DirMeta, []byte(retry)
		return Origin{Recorded: true, Events: []replay.Event{m}}
	}
	for _, tt := range []struct {
		name     string
		cfg      Options
		o        Origin
		circuits string
		stall    time.Duration
		notices  string
	}{
		{"live default", Options{Policy: mustPolicy(t, retry)}, Origin{Argv: []string{"a"}}, "file", 7 * time.Second, "thought"},
		{"recorded: memory, recorded stall and notices", Options{}, rec(replay.Event{Circuits: "file", StallTimeoutMs: 300, Notices: "off"}), storeMemory, 300 * time.Millisecond, "off"},
		{"recorded without circuits", Options{}, rec(replay.Event{Circuits: "off"}), "off", 7 * time.Second, "thought"},
		{"recorded, store named", Options{Circuits: "file", StallTimeout: time.Second, Notices: "message"}, rec(replay.Event{Circuits: "file", StallTimeoutMs: 300}), "file", time.Second, "message"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var pl Pipeline
			s, err := pl.settle(&tt.cfg, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if s.circuits != tt.circuits || s.stall != tt.stall || s.notices != tt.notices {
				t.Errorf("circuits %q stall %s notices %q, want %q %s %q", s.circuits, s.stall, s.notices, tt.circuits, tt.stall, tt.notices)
			}
		})
	}
}

// A recorded policy that does not parse is a note, and the default policy
// decides.
func TestSettleInvalidRecordedPolicy(t *testing.T) {
	var pl Pipeline
	o := Origin{Recorded: true, Events: []replay.Event{{Dir: replay.DirMeta, Policy: []byte(`{"version":9}`)}}}
	s, err := pl.settle(&Options{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.notes) != 1 || recovers(s.policy, nil) {
		t.Errorf("notes %q, policy %+v: want one note and the default policy", pl.notes, s.policy)
	}
}

// Off costs nothing: without a subscriber the guard gets no event
// function (it builds no event), without OTLP settings no telemetry is
// started; a debug logger is the only subscriber that takes frames.
func TestSubscribersOnlyWhenAsked(t *testing.T) {
	off := func(string) string { return "" }
	for _, tt := range []struct {
		name           string
		cfg            Options
		events, frames bool
		tel            bool
	}{
		{name: "nothing", cfg: Options{Getenv: off}},
		{name: "info log", cfg: Options{Getenv: off, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, events: true},
		{name: "debug log", cfg: Options{Getenv: off, Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))}, events: true, frames: true},
		{name: "OnTurn", cfg: Options{Getenv: off, OnTurn: func(event.TurnReport) {}}, events: true},
		{name: "OnEvent with frames", cfg: Options{Getenv: off, OnEvent: func(event.Event) {}, EventFrames: true}, events: true, frames: true},
		{name: "telemetry", cfg: Options{Getenv: func(k string) string {
			if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
				return "http://127.0.0.1:1"
			}
			return ""
		}}, events: true, tel: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pl := &Pipeline{log: tt.cfg.logger()}
			pl.tel = startTelemetry(context.Background(), &tt.cfg, Origin{Name: "agent"}, pl.log)
			if (pl.tel != nil) != tt.tel {
				t.Fatalf("telemetry started: %v, want %v", pl.tel != nil, tt.tel)
			}
			if pl.tel != nil {
				defer closeTelemetry(pl.tel, transport.Counts{})
			}
			var gc guard.Config
			pl.subscribe(&tt.cfg, &gc)
			if (gc.Events != nil) != tt.events || gc.Frames != tt.frames || gc.TraceContext != tt.tel {
				t.Errorf("events %v frames %v trace context %v; want %v %v %v", gc.Events != nil, gc.Frames, gc.TraceContext, tt.events, tt.frames, tt.tel)
			}
		})
	}
}

// Frames reach only the subscribers that take them; every other event
// reaches all, in order.
func TestFanoutFrames(t *testing.T) {
	var got []string
	sub := func(name string) func(event.Event) {
		return func(e event.Event) { got = append(got, fmt.Sprintf("%s:%T", name, e)) }
	}
	fn, frames := fanout([]subscriber{{fn: sub("log"), frames: true}, {fn: sub("tel")}})
	if !frames {
		t.Fatal("frames not asked for")
	}
	fn(event.FrameObserved{})
	fn(event.Answered{})
	want := "log:event.FrameObserved log:event.Answered tel:event.Answered"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("got %s, want %s", s, want)
	}
}
