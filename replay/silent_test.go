package replay_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/replay"
)

// silentCaptures is what real agents did against the fake provider
// (dev/interop/capture scenarios) and how each capture's prompt turns must be
// flagged, in order ("" for a turn that must not be). Every other real
// capture must have no flagged turn at all.
var silentCaptures = map[string][]string{
	// empty: a successful end_turn with no visible output.
	"claude/drop_before_text":       {"empty"},
	"claude/stream_error":           {"empty"},
	"claude/empty_stream":           {"empty"},
	"claude/empty_answer":           {"empty"}, // one blank chunk is no output
	"claude/stale_turn_after_error": {"", "empty", ""},
	"codex/empty_answer":            {"empty"},
	"gemini/stream_error":           {"empty"}, // after two silent internal retries
	"gemini/empty_stream":           {"empty"},
	"gemini/empty_answer":           {"empty"},
	"kilo/offline_dns":              {"empty"}, // provider unreachable, reported as an empty end_turn
	// pi-acp drops pi's error message: a failure pi does not retry
	// (400, 401, 403, 404) is an empty end_turn; one it retried ends with
	// nothing but its retry notes ("Retrying (attempt 1/3, waiting 2s)...",
	// "Retry finished, resuming."), which are diagnostics, not output, and
	// name no failure: empty too (evidence.empty.retryNotes).
	"pi/billing":                {"empty"},
	"pi/context_overflow":       {"empty"},
	"pi/empty_answer":           {"empty"},
	"pi/forbidden_403":          {"empty"},
	"pi/model_not_found_404":    {"empty"},
	"pi/unauthorized_401":       {"empty"},
	"pi/bad_gateway_502":        {"empty"},
	"pi/drop_before_text":       {"empty"},
	"pi/offline_dns":            {"empty"},
	"pi/overloaded":             {"empty"},
	"pi/quota":                  {"empty"},
	"pi/rate_limit":             {"empty"},
	"pi/rate_limit_retry_after": {"empty"},
	"pi/server_error_500":       {"empty"},
	"pi/stall":                  {"empty"},
	"pi/stream_error":           {"empty"},
	"pi/unavailable_503":        {"empty"},
	// opencode ends a stream without text end_turn with no chunk.
	"opencode/empty_answer": {"empty"},
	"opencode/empty_stream": {"empty"},
	// truncated: text streamed, zero output tokens reported.
	"claude/drop_after_text":              {"truncated"},
	"claude/text_then_error":              {"truncated"},
	"claude/drop_after_text_then_success": {"truncated"},
	"claude/text_then_error_then_success": {"truncated"},
	"gemini/text_then_error":              {"truncated"}, // also repeated (evidence)
	// repeated: the agent's own retry re-streamed the answer.
	"codex/drop_after_text_then_success":  {"repeated"},
	"codex/text_then_error_then_success":  {"repeated"},
	"gemini/text_then_error_then_success": {"repeated"},
}

func TestSilentRealCaptures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(transcriptsDir, "real", "*", "*.jsonl"))
	seen := 0
	for _, path := range files {
		if strings.HasSuffix(path, ".expected.jsonl") {
			continue
		}
		rel, _ := filepath.Rel(filepath.Join(transcriptsDir, "real"), path)
		name := strings.TrimSuffix(rel, ".jsonl")
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			events, _ := replay.ReadAll(f)
			res, err := acpguard.Replay(events, acpguard.Config{})
			if err != nil {
				t.Fatal(err)
			}
			want, listed := silentCaptures[name]
			if listed {
				seen++
			}
			var got []string
			for _, turn := range res.Turns {
				got = append(got, turn.Silent)
			}
			if !listed {
				for i, k := range got {
					if k != "" {
						t.Errorf("turn %d of a healthy capture flagged %q", i, k)
					}
				}
				return
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("flags %q, want %q", got, want)
			}
			checkSilentFrames(t, events, res, want)
			if name == "claude/stale_turn_after_error" {
				// The stale turn comes right after a failed prompt.
				found := false
				for _, fr := range res.Client {
					found = found || bytes.Contains(fr, []byte(`"empty":{"stopReason":"end_turn","afterFailure":true}`))
				}
				if !found {
					t.Error("the stale empty turn lacks evidence.empty.afterFailure")
				}
			}
		})
	}
	if seen != len(silentCaptures) {
		t.Errorf("%d of %d listed captures found", seen, len(silentCaptures))
	}
}

// checkSilentFrames checks each flagged result on the wire: the kind in
// _meta.acpGuard.silent, and every other byte as the agent wrote it.
func checkSilentFrames(t *testing.T, events []replay.Event, res acpguard.ReplayResult, want []string) {
	t.Helper()
	var flagged [][]byte
	for _, fr := range res.Client {
		if bytes.Contains(fr, []byte(`"_meta":{"acpGuard":{"silent"`)) || bytes.Contains(fr, []byte(`"acpGuard":{"silent"`)) {
			flagged = append(flagged, fr)
		}
	}
	n := 0
	for _, k := range want {
		if k != "" {
			n++
		}
	}
	if len(flagged) != n {
		t.Fatalf("%d flagged frames on the wire, want %d", len(flagged), n)
	}
	for _, fr := range flagged {
		var v struct {
			Result struct {
				Meta struct {
					AcpGuard struct {
						Silent struct {
							Kind     string          `json:"kind"`
							Evidence json.RawMessage `json:"evidence"`
						} `json:"silent"`
					} `json:"acpGuard"`
				} `json:"_meta"`
			} `json:"result"`
		}
		if err := json.Unmarshal(fr, &v); err != nil {
			t.Fatalf("flagged frame is not JSON: %v: %s", err, fr)
		}
		if v.Result.Meta.AcpGuard.Silent.Kind == "" || len(v.Result.Meta.AcpGuard.Silent.Evidence) < 3 {
			t.Errorf("no kind or evidence: %s", fr)
		}
		// Removing the inserted member gives back an agent frame byte for byte.
		found := false
		for _, orig := range stripAcpGuard(fr) {
			for _, ev := range events {
				if ev.Dir == "a2c" && bytes.Equal(bytes.TrimSpace(ev.Msg), bytes.TrimSpace(orig)) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("flagged frame is not an agent frame plus _meta.acpGuard: %s", fr)
		}
	}
}

// stripAcpGuard returns the frame without the "acpGuard" member the guard
// inserted: as the first member of an agent's _meta, or with a whole
// _meta the guard added.
func stripAcpGuard(fr []byte) [][]byte {
	i := bytes.Index(fr, []byte(`"acpGuard":`))
	if i < 0 {
		return [][]byte{fr}
	}
	var raw json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(fr[i+len(`"acpGuard":`):]))
	if dec.Decode(&raw) != nil {
		return nil
	}
	end := i + len(`"acpGuard":`) + int(dec.InputOffset())
	cut := func(a, b int) []byte { return append(append([]byte(nil), fr[:a]...), fr[b:]...) }
	if bytes.HasPrefix(fr[end:], []byte(",")) {
		return [][]byte{cut(i, end+1)}
	}
	out := [][]byte{cut(i, end)} // the agent's own _meta was empty
	if start := bytes.LastIndex(fr[:i], []byte(`"_meta":{`)); start >= 0 && bytes.HasPrefix(fr[end:], []byte("},")) {
		out = append(out, cut(start, end+2)) // the guard added _meta
	}
	return out
}
