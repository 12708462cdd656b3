package replay_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/policy"
	. "github.com/acp-guard/acp-guard/replay"
)

// The player's tests play through the one pipeline assembly
// (acpguard.Replay), as `acp-guard replay` does.

// transcript builds events from transcript lines.
func transcript(t testing.TB, lines ...string) []Event {
	t.Helper()
	events, errs := ReadAll(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if len(errs) > 0 {
		t.Fatalf("transcript: %v", errs)
	}
	return events
}

// play replays events with cfg.
func play(t testing.TB, events []Event, cfg acpguard.Config) acpguard.ReplayResult {
	t.Helper()
	res, err := acpguard.Replay(events, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

const (
	lnInit     = `{"t_ms":1,"dir":"c2a","msg":{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}}`
	lnNew      = `{"t_ms":2,"dir":"c2a","msg":{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/"}}}`
	lnNewOK    = `{"t_ms":3,"dir":"a2c","msg":{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}}`
	lnPrompt   = `{"t_ms":10,"dir":"c2a","msg":{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}}`
	lnCtrl     = `{"t_ms":11,"dir":"a2c","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Error: RetriableError: x"}}}}}`
	lnEndTurn  = `{"t_ms":12,"dir":"a2c","msg":{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}}`
	lnOverload = `{"t_ms":12,"dir":"a2c","msg":{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error: API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}}}`
)

func initOK(name string) string {
	return `{"t_ms":1,"dir":"a2c","msg":{"jsonrpc":"2.0","id":1,"result":{"agentInfo":{"name":"` + name + `"}}}}`
}

func TestPlayAdapterIdentity(t *testing.T) {
	for _, tt := range []struct {
		name, flag, meta, agentInfo string
		want                        string // outcome of a turn with a control chunk
	}{
		{"flag wins", "cursor-acp", `{"dir":"meta","argv":["codex-acp"],"adapter":"codex-acp"}`, "codex-acp", "rewritten"},
		{"flag other", "codex-acp", `{"dir":"meta","argv":["cursor-agent"],"adapter":"cursor-acp"}`, "cursor-agent", "passed"},
		{"meta beats agentInfo", "", `{"dir":"meta","argv":["wrapper"],"adapter":"cursor-acp"}`, "codex-acp", "rewritten"},
		{"agentInfo beats command", "", `{"dir":"meta","argv":["wrapper"],"adapter":"wrapper"}`, "cursor-agent", "rewritten"},
		{"command basename last", "", `{"dir":"meta","argv":["/usr/bin/cursor-agent"]}`, "", "rewritten"},
		{"no identity", "", `{"dir":"meta"}`, "", "passed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lines := []string{tt.meta, lnInit}
			if tt.agentInfo != "" {
				lines = append(lines, initOK(tt.agentInfo))
			}
			lines = append(lines, lnNew, lnNewOK, lnPrompt, lnCtrl, lnEndTurn)
			res := play(t, transcript(t, lines...), acpguard.Config{Adapter: tt.flag})
			if len(res.Turns) != 1 || string(res.Turns[0].Outcome) != tt.want {
				t.Errorf("got turns %+v, want one %q", res.Turns, tt.want)
			}
		})
	}
}

func TestPlayFeedsWireBytes(t *testing.T) {
	// A CRLF frame and a raw line reach the client exactly as they came.
	res := play(t, transcript(t,
		lnInit,
		`{"t_ms":2,"dir":"a2c","crlf":true,"msg":{"jsonrpc":"2.0","id":1,"result":{}}}`,
		`{"t_ms":3,"dir":"a2c","raw":"not json"}`,
		`{"t_ms":4,"dir":"a2c","raw":" {\"a\":1} ","msg":{"a":1}}`,
	), acpguard.Config{})
	want := []string{`{"jsonrpc":"2.0","id":1,"result":{}}` + "\r\n", "not json\n", ` {"a":1} ` + "\n"}
	if len(res.Client) != len(want) {
		t.Fatalf("got %q, want %q", res.Client, want)
	}
	for i := range want {
		if string(res.Client[i]) != want[i] {
			t.Errorf("frame %d: got %q, want %q", i, res.Client[i], want[i])
		}
	}
}

func TestPlayRetry(t *testing.T) {
	doc, err := acpguard.ParsePolicy([]byte(`{"version":1,
		"transient":{"retry":{"enabled":true,"max_retries":2,"initial_interval_seconds":1},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
		"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`))
	if err != nil {
		t.Fatal(err)
	}
	base := []string{`{"dir":"meta","adapter":"claude-agent-acp"}`, lnNew, lnNewOK, lnPrompt, lnOverload}
	guardRetry := `{"t_ms":1012,"dir":"c2a","via":"guard","msg":{"jsonrpc":"2.0","id":"acp-guard:1","method":"session/prompt","params":{}}}`
	for _, tt := range []struct {
		name       string
		lines      []string
		opts       acpguard.Config
		outcome    string
		action     policy.Action
		errs       int
		divergence bool
	}{
		{"retry answered", append(append([]string{}, base...), guardRetry,
			`{"t_ms":1013,"dir":"a2c","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}}`,
			`{"t_ms":1013,"dir":"a2c","msg":{"jsonrpc":"2.0","id":"acp-guard:1","result":{"stopReason":"end_turn"}}}`),
			acpguard.Config{Policy: doc}, "retried", policy.ActionRetry, 0, false},
		// The recording's clock ran a little behind: the answer is stamped
		// before the virtual timer is due; the player fires it first, so
		// the answer lines up with the proxy's request (an empty answer:
		// reported as the failure it did not recover, not as a success).
		{"answer stamped early", append(append([]string{}, base...),
			`{"t_ms":1005,"dir":"a2c","msg":{"jsonrpc":"2.0","id":"acp-guard:1","result":{"stopReason":"end_turn"}}}`),
			acpguard.Config{Policy: doc}, "annotated", policy.ActionStop, 0, false},
		{"transcript ends while waiting", base, acpguard.Config{Policy: doc}, "retried", policy.ActionRetry, 0, false},
		{"default policy diverges", append(append([]string{}, base...), guardRetry,
			`{"t_ms":1013,"dir":"a2c","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}}`,
			`{"t_ms":1013,"dir":"a2c","msg":{"jsonrpc":"2.0","id":"acp-guard:1","result":{"stopReason":"end_turn"}}}`),
			acpguard.Config{}, "annotated", policy.ActionStop, 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := play(t, transcript(t, tt.lines...), tt.opts)
			if len(res.Turns) != 1 {
				t.Fatalf("got %d turns, want 1: %+v", len(res.Turns), res.Turns)
			}
			turn := res.Turns[0]
			if string(turn.Outcome) != tt.outcome || turn.Decision == nil || turn.Decision.Action != string(tt.action) {
				t.Errorf("got outcome %q decision %+v, want %q %q", turn.Outcome, turn.Decision, tt.outcome, tt.action)
			}
			if len(res.Errors) != tt.errs {
				t.Fatalf("got errors %v, want %d", res.Errors, tt.errs)
			}
			var dv *Divergence
			if tt.divergence && !errors.As(res.Errors[0], &dv) {
				t.Errorf("got %v, want a *Divergence", res.Errors[0])
			}
			if res.Bad() {
				t.Errorf("Bad() = true for %v", res.Errors)
			}
		})
	}
}

func TestPlayBadInput(t *testing.T) {
	for _, tt := range []struct {
		name  string
		lines []string
		want  []string // errors, in order
		turns []string // outcomes
	}{
		{"missing prompt response", []string{lnNew, lnNewOK, lnPrompt}, []string{"line 3: session/prompt id 3 has no response: the transcript ends first"}, []string{"failed"}},
		{"exit answers the prompt", []string{lnNew, lnNewOK, lnPrompt, `{"t_ms":20,"dir":"exit","code":1}`}, nil, []string{"failed"}},
		{"response without request", []string{lnEndTurn}, []string{"line 1: response id 3 answers no pending request (out of order or duplicated)"}, nil},
		{"duplicate response", []string{lnNew, lnNewOK, lnNewOK}, []string{"line 3: response id 2 answers no pending request (out of order or duplicated)"}, nil},
		{"reused request id", []string{lnNew, lnNew}, []string{"line 2: request id 2 reuses the id of the session/new request on line 1, still unanswered"}, nil},
		{"client answers nothing", []string{`{"t_ms":1,"dir":"c2a","msg":{"jsonrpc":"2.0","id":9,"result":{}}}`}, []string{"line 1: client response id 9 answers no pending agent request (out of order or duplicated)"}, nil},
		{"time goes back", []string{lnPrompt, `{"t_ms":1,"dir":"stderr","msg":"x"}`}, []string{"line 2: t_ms 1 is earlier than the previous event's 10 (events out of order)", "line 1: session/prompt id 3 has no response: the transcript ends first"}, []string{"failed"}},
		{"second meta", []string{lnInit, `{"dir":"meta"}`}, []string{"line 2: meta event after the first event (ignored)"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := play(t, transcript(t, tt.lines...), acpguard.Config{})
			var got []string
			for _, e := range res.Errors {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got errors %q, want %q", got, tt.want)
			}
			if res.Bad() != (len(tt.want) > 0) {
				t.Errorf("Bad() = %v", res.Bad())
			}
			var outcomes []string
			for _, r := range res.Turns {
				outcomes = append(outcomes, string(r.Outcome))
			}
			if strings.Join(outcomes, ",") != strings.Join(tt.turns, ",") {
				t.Errorf("got outcomes %q, want %q", outcomes, tt.turns)
			}
		})
	}
}

func TestErrorsByLine(t *testing.T) {
	got := ErrorsByLine(
		[]error{&LineError{Line: 5, Err: errors.New("a")}, errors.New("read failed")},
		[]error{&Divergence{Line: 2, Err: errors.New("b")}, &LineError{Line: 7, Err: errors.New("c")}},
	)
	var s []string
	for _, e := range got {
		s = append(s, e.Error())
	}
	want := "read failed|line 2: note: b|line 5: a|line 7: c"
	if strings.Join(s, "|") != want {
		t.Errorf("got %q, want %q", strings.Join(s, "|"), want)
	}
}

// FuzzPlay plays arbitrary transcripts: the player must not panic, must
// report every client prompt at most once, and must be deterministic.
func FuzzPlay(f *testing.F) {
	filepath.WalkDir(filepath.Join("..", "testdata", "transcripts"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			if data, err := os.ReadFile(path); err == nil && len(data) < 1<<20 {
				f.Add(data)
			}
		}
		return nil
	})
	f.Add([]byte(strings.Join([]string{lnNew, lnNewOK, lnPrompt, lnCtrl, lnOverload, lnEndTurn, `{"t_ms":5,"dir":"exit","code":-1,"signal":"SIGKILL"}`, lnPrompt}, "\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		events, _ := ReadAll(bytes.NewReader(data))
		a := play(t, events, acpguard.Config{})
		b := play(t, events, acpguard.Config{})
		if len(a.Turns) != len(b.Turns) || len(a.Client) != len(b.Client) || len(a.Errors) != len(b.Errors) {
			t.Fatalf("two plays differ: %d/%d turns, %d/%d frames", len(a.Turns), len(b.Turns), len(a.Client), len(b.Client))
		}
		prompts := 0
		for _, ev := range events {
			if ev.Dir == DirC2A && ev.Via == "" && bytes.Contains(ev.Msg, []byte(`"session/prompt"`)) {
				prompts++
			}
		}
		if len(a.Turns) > prompts {
			t.Fatalf("%d turns reported for %d prompts", len(a.Turns), prompts)
		}
	})
}
