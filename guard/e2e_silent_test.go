package guard_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// e2eMeta is result._meta.acpGuard as the client sees it.
type e2eMeta struct {
	Silent *struct {
		Kind     string                     `json:"kind"`
		Evidence map[string]json.RawMessage `json:"evidence"`
	} `json:"silent"`
	Stop *struct {
		Code  string `json:"code"`
		Class string `json:"class"`
	} `json:"stop"`
}

func resultMeta(t *testing.T, f acptest.Frame) (e2eMeta, bool) {
	t.Helper()
	var r struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if f.Error != nil || json.Unmarshal(f.Result, &r) != nil {
		t.Fatalf("not a result: %s", f.Raw)
	}
	raw, ok := r.Meta["acpGuard"]
	if !ok {
		return e2eMeta{}, false
	}
	var m e2eMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("_meta.acpGuard %s: %v", raw, err)
	}
	return m, true
}

// A silent failure or an abnormal stop reason reaches the client as the
// agent's own result plus _meta.acpGuard, every other byte unchanged; a
// healthy turn is untouched.
func TestE2ESilentFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		scenario string
		kind     string   // silent kind ("" none)
		evidence []string // evidence members
		stop     string   // stop code ("" none)
	}{
		{"silent-empty", "empty", []string{"empty"}, ""},
		{"empty", "empty", []string{"empty"}, ""},
		{"silent-truncated", "truncated", []string{"truncated"}, ""},
		{"silent-repeated", "repeated", []string{"repeated"}, ""},
		{"refusal", "", nil, "content_refused"},
		{"max-tokens", "", nil, "max_tokens"},
		{"success", "", nil, ""},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			frames := promptTurn(t, startProxy(t, nil, "--scenario", tt.scenario))
			resp := acptest.ResponsesTo(frames, "3")
			if len(resp) != 1 {
				t.Fatalf("responses to 3: got %d, want 1", len(resp))
			}
			m, ok := resultMeta(t, resp[0])
			if want := tt.kind != "" || tt.stop != ""; ok != want {
				t.Fatalf("_meta.acpGuard present %v, want %v: %s", ok, want, resp[0].Raw)
			}
			if !ok {
				direct := directTurn(t, "--scenario", tt.scenario)
				if !bytes.Contains(direct, resp[0].Raw) {
					t.Errorf("healthy result changed: %s", resp[0].Raw)
				}
				return
			}
			if tt.kind != "" {
				if m.Silent == nil || m.Silent.Kind != tt.kind {
					t.Fatalf("silent: got %+v, want kind %q", m.Silent, tt.kind)
				}
				for _, k := range tt.evidence {
					if _, ok := m.Silent.Evidence[k]; !ok {
						t.Errorf("evidence lacks %q: %s", k, resp[0].Raw)
					}
				}
			}
			if tt.stop != "" && (m.Stop == nil || m.Stop.Code != tt.stop || m.Stop.Class != "request") {
				t.Errorf("stop: got %+v, want code %q class request", m.Stop, tt.stop)
			}
			// The agent's frame plus the inserted member, nothing else.
			direct := directTurn(t, "--scenario", tt.scenario)
			i := bytes.Index(resp[0].Raw, []byte(`"_meta":{"acpGuard":`))
			if i < 0 {
				t.Fatalf("_meta not inserted as the result's first member: %s", resp[0].Raw)
			}
			var meta json.RawMessage
			dec := json.NewDecoder(bytes.NewReader(resp[0].Raw[i+len(`"_meta":`):]))
			if err := dec.Decode(&meta); err != nil {
				t.Fatal(err)
			}
			end := i + len(`"_meta":`) + int(dec.InputOffset()) + 1 // and its comma
			orig := append(append([]byte(nil), resp[0].Raw[:i]...), resp[0].Raw[end:]...)
			if !bytes.Contains(direct, orig) {
				t.Errorf("result differs beyond _meta:\n got %s\nwant it in %s", orig, direct)
			}
		})
	}
}

func emptyErrorPolicy(t *testing.T, retries int) string {
	t.Helper()
	retry := `{"enabled":false,"max_retries":0,"initial_interval_seconds":0}`
	if retries > 0 {
		retry = `{"enabled":true,"max_retries":` + string(rune('0'+retries)) + `,"initial_interval_seconds":1}`
	}
	return acptest.WriteFile(t, "policy.json", `{"version":1,"empty_turn":"error",
"transient":{"retry":`+retry+`,"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`)
}

// With empty_turn "error" an empty end_turn is an empty_response failure:
// the per-class policy retries it, and without retries the client gets it.
func TestE2EEmptyTurnError(t *testing.T) {
	t.Parallel()
	t.Run("recovered", func(t *testing.T) {
		t.Parallel()
		rec := t.TempDir() + "/t.jsonl"
		frames := promptTurn(t, startProxy(t, []string{"--policy", emptyErrorPolicy(t, 1), "--record", rec}, "--scenario", "empty-then-succeed", "--fail", "1"))
		resp := acptest.ResponsesTo(frames, "3")
		if len(resp) != 1 || stopReason(t, resp[0]) != "end_turn" {
			t.Fatalf("responses to 3: %d, want one end_turn result", len(resp))
		}
		if total, via := promptsToAgent(t, transcript(t, rec)); total != 2 || via != 1 {
			t.Errorf("prompts to the agent: %d (%d by the guard), want 2 (1)", total, via)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		t.Parallel()
		frames := promptTurn(t, startProxy(t, []string{"--policy", emptyErrorPolicy(t, 0)}, "--scenario", "empty-then-succeed", "--fail", "1"))
		resp := acptest.ResponsesTo(frames, "3")
		if len(resp) != 1 {
			t.Fatalf("responses to 3: %d, want 1", len(resp))
		}
		pe, _ := errorData(t, resp[0])
		if pe.Code != "empty_response" || pe.Class != "transient" || !pe.ReplaySafe || pe.Recovery.Action != "stop" {
			t.Errorf("providerError: %+v", pe)
		}
	})
	t.Run("retry empty again", func(t *testing.T) {
		t.Parallel()
		frames := promptTurn(t, startProxy(t, []string{"--policy", emptyErrorPolicy(t, 1)}, "--scenario", "empty-then-succeed", "--fail", "5"))
		resp := acptest.ResponsesTo(frames, "3")
		if len(resp) != 1 {
			t.Fatalf("responses to 3: %d, want 1", len(resp))
		}
		pe, _ := errorData(t, resp[0])
		if pe.Code != "empty_response" || pe.Recovery.Reason != "empty_retry_result" {
			t.Errorf("providerError: %+v", pe)
		}
	})
	t.Run("pass by default", func(t *testing.T) {
		t.Parallel()
		frames := promptTurn(t, startProxy(t, nil, "--scenario", "empty-then-succeed", "--fail", "1"))
		if resp := acptest.ResponsesTo(frames, "3"); len(resp) != 1 || resp[0].Error != nil {
			t.Fatalf("responses to 3: %d, want one result", len(resp))
		}
	})
}

// An agent that stops talking and ignores session/cancel: with the
// watchdog on, the prompt ends agent_stalled (never recovered), the agent
// got a session/cancel, and its late answer never reaches the client.
func TestE2EStallWatchdog(t *testing.T) {
	t.Parallel()
	rec := t.TempDir() + "/t.jsonl"
	p := startProxy(t, []string{"--stall-timeout", "300ms", "--record", rec, "--policy", acptest.RetryPolicy(t, 3, 1)},
		"--scenario", "stall-after-text", "--delay", "4s")
	_, sid := p.Open()
	p.Send(acptest.Prompt(3, sid))
	frames := p.Until("3")
	pe, _ := errorData(t, frames[len(frames)-1])
	if pe.Code != "agent_stalled" || pe.Class != "unclassified" || pe.Recovery.Action != "stop" || pe.Recovery.Reason != "agent_stalled" {
		t.Errorf("providerError: %+v", pe)
	}
	var ev struct {
		StalledMs int64  `json:"stalledMs"`
		LastFrame string `json:"lastFrame"`
	}
	var data struct {
		PE struct {
			Evidence json.RawMessage `json:"evidence"`
		} `json:"providerError"`
	}
	_ = json.Unmarshal(frames[len(frames)-1].Error.Data, &data)
	if json.Unmarshal(data.PE.Evidence, &ev) != nil || ev.StalledMs < 300 || ev.LastFrame != "agent_message_chunk" {
		t.Errorf("evidence: %s", data.PE.Evidence)
	}
	// Wait (on the proxy's log, not a clock) until the agent's late answer
	// reached the proxy and was dropped; the process watchdog bounds it.
	if !p.Stderr.WaitFor("late agent response to a request the proxy answered; dropped") {
		t.Fatalf("the agent's late answer never reached the proxy; stderr:\n%s", p.Stderr.String())
	}
	rest, _ := p.Finish()
	if n := len(acptest.ResponsesTo(rest, "3")); n != 0 {
		t.Errorf("prompt 3 answered %d more times", n)
	}
	evs := transcript(t, rec)
	cancels := 0
	for _, e := range evs {
		if e.Dir == "c2a" && e.Via == "guard" && bytes.Contains(e.Msg, []byte(`"session/cancel"`)) {
			cancels++
		}
	}
	if cancels != 1 {
		t.Errorf("session/cancel sent by the guard: %d, want 1", cancels)
	}
	if total, _ := promptsToAgent(t, evs); total != 1 {
		t.Errorf("prompts to the agent: %d, want 1 (a stall is never retried)", total)
	}
}

// Without the watchdog a slow agent is left alone.
func TestE2EStallWatchdogOff(t *testing.T) {
	t.Parallel()
	frames := promptTurn(t, startProxy(t, nil, "--scenario", "stall-after-text", "--delay", "1s"))
	if resp := acptest.ResponsesTo(frames, "3"); len(resp) != 1 || resp[0].Error != nil {
		t.Fatalf("responses to 3: want the agent's result")
	}
}

// The watchdog judges silence, not slowness: an agent that keeps sending
// (here a chunk every 400ms) is never cancelled under a 3s timeout.
func TestE2EStallWatchdogSlowAgent(t *testing.T) {
	t.Parallel()
	frames := promptTurn(t, startProxy(t, []string{"--stall-timeout", "3s"}, "--scenario", "stream", "--count", "12", "--delay", "400ms"))
	if resp := acptest.ResponsesTo(frames, "3"); len(resp) != 1 || resp[0].Error != nil {
		t.Fatalf("responses to 3: want the agent's result, got %s", frames[len(frames)-1].Raw)
	}
}
