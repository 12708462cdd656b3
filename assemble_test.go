package acpguard

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
	"github.com/acp-guard/acp-guard/replay"
	"github.com/acp-guard/acp-guard/transport"
)

//go:generate go test -run TestTerminalGoldens -record .
//go:generate go test ./replay -run TestGolden -update

func mustPolicy(t *testing.T, doc string) *Policy {
	t.Helper()
	p, err := ParsePolicy([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
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
		cfg    Config
		o      origin
		keep   bool
		defers bool
	}{
		{"default policy", Config{}, origin{argv: []string{"a"}}, false, false},
		{"default policy, state dir named", Config{StateDir: "/x"}, origin{argv: []string{"a"}}, true, false},
		{"retry", Config{Policy: mustPolicy(t, `{"version":1,"transient":{"retry":{"enabled":true,"max_retries":1,"initial_interval_seconds":1}}}`)}, origin{argv: []string{"a"}}, true, false},
		{"wait for reset", Config{Policy: mustPolicy(t, `{"version":1,"hard":{"wait_for_reset":{"enabled":true,"max_wait_seconds":60}}}`)}, origin{argv: []string{"a"}}, true, false},
		{"fallback models", Config{Fallback: []string{"m"}}, origin{argv: []string{"a"}}, true, false},
		{"compaction only", Config{Policy: mustPolicy(t, `{"version":1,"request":{"compact_then_retry":true}}`)}, origin{argv: []string{"a"}}, true, false},
		{"empty turn error", Config{Policy: mustPolicy(t, `{"version":1,"empty_turn":"error"}`)}, origin{argv: []string{"a"}}, true, false},
		{"stall only", Config{Policy: mustPolicy(t, `{"version":1,"stall_timeout_seconds":5}`)}, origin{argv: []string{"a"}}, false, false},
		{"recorded with a log", Config{}, origin{recorded: true, events: meta("dir")}, true, true},
		{"recorded with a log, other policy", Config{Policy: mustPolicy(t, `{"version":1}`)}, origin{recorded: true, events: meta("dir")}, true, false},
		{"recorded without", Config{}, origin{recorded: true, events: meta("")}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var pl pipeline
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
	rec := func(m replay.Event) origin {
		m.Dir, m.Policy = replay.DirMeta, []byte(retry)
		return origin{recorded: true, events: []replay.Event{m}}
	}
	for _, tt := range []struct {
		name     string
		cfg      Config
		o        origin
		circuits string
		stall    time.Duration
		notices  string
	}{
		{"live default", Config{Policy: mustPolicy(t, retry)}, origin{argv: []string{"a"}}, "file", 7 * time.Second, "thought"},
		{"recorded: memory, recorded stall and notices", Config{}, rec(replay.Event{Circuits: "file", StallTimeoutMs: 300, Notices: "off"}), storeMemory, 300 * time.Millisecond, "off"},
		{"recorded without circuits", Config{}, rec(replay.Event{Circuits: "off"}), "off", 7 * time.Second, "thought"},
		{"recorded, store named", Config{Circuits: "file", StallTimeout: time.Second, Notices: "message"}, rec(replay.Event{Circuits: "file", StallTimeoutMs: 300}), "file", time.Second, "message"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var pl pipeline
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
	var pl pipeline
	o := origin{recorded: true, events: []replay.Event{{Dir: replay.DirMeta, Policy: []byte(`{"version":9}`)}}}
	s, err := pl.settle(&Config{}, o)
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
		cfg            Config
		events, frames bool
		tel            bool
	}{
		{name: "nothing", cfg: Config{Getenv: off}},
		{name: "info log", cfg: Config{Getenv: off, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, events: true},
		{name: "debug log", cfg: Config{Getenv: off, Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))}, events: true, frames: true},
		{name: "OnTurn", cfg: Config{Getenv: off, OnTurn: func(TurnReport) {}}, events: true},
		{name: "OnEvent with frames", cfg: Config{Getenv: off, OnEvent: func(Event) {}, EventFrames: true}, events: true, frames: true},
		{name: "telemetry", cfg: Config{Getenv: func(k string) string {
			if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
				return "http://127.0.0.1:1"
			}
			return ""
		}}, events: true, tel: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pl := &pipeline{log: tt.cfg.logger()}
			pl.tel = startTelemetry(context.Background(), &tt.cfg, origin{name: "agent"}, pl.log)
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
