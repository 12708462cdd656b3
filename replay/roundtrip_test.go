package replay_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/testbin"
	"github.com/acp-guard/acp-guard/replay"
)

func TestMain(m *testing.M) { testbin.Main(m) }

const retryPolicy = `{"version":1,
 "transient":{"retry":{"enabled":true,"max_retries":2,"initial_interval_seconds":1},
              "wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
 "hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},
         "wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`

const compactPolicy = `{"version":1,"transient":{"on_exhausted":"stop"},"hard":{"on_exhausted":"stop"},
 "request":{"compact_then_retry":true}}`

// drive runs `acp-guard FLAGS -- AGENT…` as an ACP client would: it opens a
// session, sends one prompt, answers the agent's requests, and returns
// every frame it received (line endings included) once the prompt is
// answered and acp-guard has exited after stdin closed.
func drive(t *testing.T, flags []string, agent ...string) [][]byte {
	t.Helper()
	return driveArgs(t, append(append(append([]string{}, flags...), "--", testbin.Path(t)), agent...)...)
}

// driveArgs is drive with acp-guard's whole command line.
func driveArgs(t *testing.T, args ...string) [][]byte {
	t.Helper()
	p := acptest.Start(t, append([]string{acptest.Bin(t)}, args...), acptest.Options{Answer: acptest.Permissive, Record: true, SkipInvalid: true})
	p.Send(acptest.InitializeAll(1))
	p.Until("1")
	p.Send(acptest.SessionNew(2))
	got := p.Until("2")
	sid, err := acptest.SessionID(got[len(got)-1])
	if err != nil {
		t.Fatal(err)
	}
	p.Send(acptest.Request(3, "session/prompt", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"hello"}]}`))
	p.Until("3")
	p.CloseStdin()
	p.RestBytes()
	p.Wait()
	return p.Lines()
}

// wallTimes matches the fields that hold acp-guard's wall clock.
var wallTimes = regexp.MustCompile(`"(occurredAt|deadline)":"[^"]*"`)

// normalize drops wall-clock times so live and virtual runs compare.
func normalize(frames [][]byte) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = wallTimes.ReplaceAllString(string(f), `"$1":"T"`)
	}
	return out
}

// TestRoundTrip records demo-agent sessions through the real proxy, plays
// each recording offline (the same client frames and verdicts as live) and
// serves it as the agent behind acp-guard (the same client frames as the
// original, byte for byte except acp-guard's own wall-clock times).
func TestRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the acp-guard binary")
	}
	for _, tt := range []struct {
		name    string
		policy  string
		agent   []string
		outcome string
	}{
		{"cursor control chunk", "", []string{"demo-agent", "--scenario", "cursor-retriable"}, "rewritten"},
		{"annotated error", "", []string{"demo-agent", "--scenario", "claude-error"}, "annotated"},
		{"tools and agent requests", "", []string{"demo-agent", "--scenario", "tools"}, "passed"},
		{"retried then succeeded", retryPolicy, []string{"demo-agent", "--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "claude-agent-acp"}, "retried"},
		{"compacted then retried", compactPolicy, []string{"demo-agent", "--scenario", "compact"}, "retried"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rec := filepath.Join(dir, "session.jsonl")
			var flags []string
			var cfg acpguard.Config
			if tt.policy != "" {
				pf := filepath.Join(dir, "policy.json")
				if err := os.WriteFile(pf, []byte(tt.policy), 0o600); err != nil {
					t.Fatal(err)
				}
				doc, err := acpguard.ParsePolicy([]byte(tt.policy))
				if err != nil {
					t.Fatal(err)
				}
				cfg.Policy = doc
				flags = append(flags, "--policy", pf, "--state-dir", filepath.Join(dir, "state"))
			}
			live := drive(t, append([]string{"--record", rec}, flags...), tt.agent...)

			f, err := os.Open(rec)
			if err != nil {
				t.Fatal(err)
			}
			events, errs := replay.ReadAll(f)
			f.Close()
			if len(errs) > 0 {
				t.Fatalf("reading the recording: %v", errs)
			}
			// The recording holds exactly what the client saw.
			acptest.EqualFrames(t, "recorded client view", normalize(replay.ClientView(events)), normalize(live))

			// Offline: the same frames to the client and the expected verdict.
			res, err := acpguard.Replay(events, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Errors) > 0 {
				t.Errorf("offline replay errors: %v", res.Errors)
			}
			acptest.EqualFrames(t, "offline client frames", normalize(res.Client), normalize(live))
			if len(res.Turns) != 1 || string(res.Turns[0].Outcome) != tt.outcome {
				t.Errorf("offline turns = %+v, want one %q", res.Turns, tt.outcome)
			}

			// Served behind acp-guard: the client sees the original frames,
			// whether acp-guard runs in front of the served agent in one
			// process (replay --serve, with the recorded configuration) or
			// as another process.
			served := driveArgs(t, "replay", "--serve", "--no-delay", rec)
			acptest.EqualFrames(t, "served client frames", normalize(served), normalize(live))
			// A separate acp-guard draws its retry jitter from the recorded
			// seed only when told.
			if m, ok := replay.MetaOf(events); !ok || m.JitterSeed == 0 {
				t.Fatalf("the recording's meta event has no jitter seed")
			} else {
				flags = append(flags, "--jitter-seed", strconv.FormatUint(m.JitterSeed, 10))
			}
			behind := drive(t, flags, "replay", "--serve", "--agent-only", "--no-delay", rec)
			acptest.EqualFrames(t, "client frames served behind acp-guard", normalize(behind), normalize(live))
		})
	}
}

// TestPlayLinesUpProxyIDs checks that the guard's own requests in a
// recording are regenerated by the replay, not fed: the via-guard frames
// of a retried recording match the replay's agent-bound frames.
func TestPlayLinesUpProxyIDs(t *testing.T) {
	path := filepath.Join(transcriptsDir, "recorded", "retried.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	events, errs := replay.ReadAll(bytes.NewReader(data))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	pdata, err := os.ReadFile(filepath.Join(transcriptsDir, "recorded", "retried.policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := acpguard.ParsePolicy(pdata)
	if err != nil {
		t.Fatal(err)
	}
	res, err := acpguard.Replay(events, acpguard.Config{Policy: doc})
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, ev := range events {
		if ev.Dir == replay.DirC2A && !ev.Suppressed {
			want = append(want, string(ev.Bytes())+"\n")
		}
	}
	for _, f := range res.Agent {
		got = append(got, string(f))
	}
	acptest.EqualFrames(t, "agent-bound frames", got, want)
}
