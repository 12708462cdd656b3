package guard_test

// The end-to-end tests run the real acp-guard binary around the demo agent
// (the same binary's demo-agent command) over real pipes, through the
// shared harness (internal/acptest); what is here decodes what the guard
// adds (notices, ProviderErrors) independently of its own types.

import (
	"encoding/json"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/testbin"
	"github.com/acp-guard/acp-guard/replay"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// startProxy runs `acp-guard FLAGS -- demo-agent ARGS…` (internal/acptest).
func startProxy(t *testing.T, flags []string, agentArgs ...string) *acptest.Proc {
	t.Helper()
	return acptest.Guard(t, flags, acptest.DemoAgent(t, agentArgs...)...)
}

// startArgv runs argv under the test.
func startArgv(t *testing.T, argv ...string) *acptest.Proc {
	t.Helper()
	return acptest.Start(t, argv, acptest.Options{})
}

// update is a session/update's update object.
type e2eUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	Content       struct {
		Text string `json:"text"`
	} `json:"content"`
	Meta struct {
		AcpGuard struct {
			Retry *e2eRetry `json:"retry"`
		} `json:"acpGuard"`
	} `json:"_meta"`
}

type e2eRetry struct {
	Attempt    int    `json:"attempt"`
	MaxRetries int    `json:"maxRetries"`
	DelayMs    int64  `json:"delayMs"`
	Deadline   string `json:"deadline"`
	Code       string `json:"code"`
	Class      string `json:"class"`
	Action     string `json:"action"`
}

// updateOf decodes a session/update's update; ok is false for any other
// frame.
func updateOf(t *testing.T, f acptest.Frame) (e2eUpdate, bool) {
	t.Helper()
	if f.Method != "session/update" {
		return e2eUpdate{}, false
	}
	var p struct {
		Update e2eUpdate `json:"update"`
	}
	if err := json.Unmarshal(f.Params, &p); err != nil {
		t.Fatalf("session/update params %s: %v", f.Params, err)
	}
	return p.Update, true
}

// retryNotices returns the retry notices among frames.
func retryNotices(t *testing.T, frames []acptest.Frame) []e2eUpdate {
	t.Helper()
	var out []e2eUpdate
	for _, f := range frames {
		if u, ok := updateOf(t, f); ok && u.Meta.AcpGuard.Retry != nil {
			out = append(out, u)
		}
	}
	return out
}

// e2ePE is a ProviderError as decoded by the test.
type e2ePE struct {
	Schema       string  `json:"schema"`
	Code         string  `json:"code"`
	Class        string  `json:"class"`
	Confidence   string  `json:"confidence"`
	Rule         string  `json:"rule"`
	Source       string  `json:"source"`
	ProviderID   string  `json:"providerId"`
	SessionID    string  `json:"sessionId"`
	OccurredAt   string  `json:"occurredAt"`
	RetryAfterMs *int64  `json:"retryAfterMs"`
	ResetAt      *string `json:"resetAt"`
	ReplaySafe   bool    `json:"replaySafe"`
	Evidence     struct {
		AssistantOutput bool `json:"assistantOutput"`
		Thoughts        bool `json:"thoughts"`
		ToolActivity    bool `json:"toolActivity"`
		AgentExited     bool `json:"agentExited"`
	} `json:"evidence"`
	Model    string `json:"model"`
	Recovery struct {
		Action     string `json:"action"`
		Attempt    int    `json:"attempt"`
		MaxRetries int    `json:"maxRetries"`
		Reason     string `json:"reason"`
	} `json:"recovery"`
}

// errorData decodes an error response's data: the providerError and the
// remaining members as raw JSON.
func errorData(t *testing.T, f acptest.Frame) (e2ePE, map[string]json.RawMessage) {
	t.Helper()
	if f.Error == nil {
		t.Fatalf("not an error response: %s", f.Raw)
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(f.Error.Data, &data); err != nil {
		t.Fatalf("error data of %s: %v", f.Raw, err)
	}
	raw, ok := data["providerError"]
	if !ok {
		t.Fatalf("no providerError in %s", f.Raw)
	}
	var pe e2ePE
	if err := json.Unmarshal(raw, &pe); err != nil {
		t.Fatalf("providerError %s: %v", raw, err)
	}
	delete(data, "providerError")
	return pe, data
}

// stopReason returns a prompt result's stopReason.
func stopReason(t *testing.T, f acptest.Frame) string {
	t.Helper()
	if f.Error != nil || f.Result == nil {
		t.Fatalf("not a result: %s", f.Raw)
	}
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(f.Result, &r); err != nil {
		t.Fatalf("result %s: %v", f.Result, err)
	}
	return r.StopReason
}

// transcript reads a --record transcript.
func transcript(t *testing.T, path string) []replay.Event {
	t.Helper()
	evs, errs := replay.ReadFile(path)
	if len(errs) > 0 {
		t.Fatalf("transcript %s: %v", path, errs)
	}
	return evs
}

// promptsToAgent returns the session/prompt frames the agent received
// (c2a, not suppressed) and how many of them the guard sent.
func promptsToAgent(t *testing.T, evs []replay.Event) (total, viaGuard int) {
	t.Helper()
	for _, e := range evs {
		if e.Dir != replay.DirC2A || e.Suppressed || !e.IsJSON() {
			continue
		}
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(e.Msg, &m) == nil && m.Method == "session/prompt" {
			total++
			if e.Via == replay.ViaGuard {
				viaGuard++
			}
		}
	}
	return total, viaGuard
}
