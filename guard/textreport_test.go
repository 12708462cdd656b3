package guard_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// textHarness is the harness with late-output reports.
func textHarness(t *testing.T, adapter string, doc policy.Document) (*harness, *[]guard.LateOutput) {
	t.Helper()
	h := &harness{t: t, v: transport.NewVirtual(epoch)}
	var late []guard.LateOutput
	g := guard.New(guard.Config{
		Identity: observers.Identity{Flag: adapter},
		Engine:   catalogue.Default(),
		Policy:   doc,
		Attempts: h,
		OnTurn:   func(r guard.TurnReport) { h.reports = append(h.reports, r) },
		OnLate:   func(l guard.LateOutput) { late = append(late, l) },
	})
	h.r = transport.NewRelay(transport.Config{MaxLine: 1 << 20, Hooks: g}, h.v)
	return h, &late
}

func mustPolicy(t *testing.T, s string) policy.Document {
	t.Helper()
	d, err := policy.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const retryEverything = `{"transient":{"retry":{"max_retries":3,"initial_interval_seconds":1},"on_exhausted":"stop"},
 "hard":{"retry":{"max_retries":3,"initial_interval_seconds":1},"on_exhausted":"stop"}}`

// lastAnswer runs the turn's frames and returns the one answer to id 2.
func lastAnswer(t *testing.T, h *harness, frames ...string) (answer string, forwarded []string) {
	t.Helper()
	for _, f := range frames {
		h.agent("%s", f)
	}
	got := h.clientFrames()
	if len(got) == 0 {
		t.Fatalf("no frame reached the client")
	}
	return got[len(got)-1], got[:len(got)-1]
}

// A turn whose whole visible text is one error line is a failure for any
// adapter, an unknown one included; the line reached the client, and is a
// diagnostic, not output, for the gate.
func TestErrorLineProjectedForAnyAdapter(t *testing.T) {
	for _, tt := range []struct {
		name, adapter, text string
		code, rule          string
	}{
		{"unknown agent, status and phrase", "brand-new-agent", "Error: 429 Too Many Requests", "rate_limited", ""},
		{"unknown agent, bracketed with a marker", "brand-new-agent", "✕ [API Error: 429 Resource has been exhausted (e.g. check quota).]", "rate_limited", ""},
		{"Copilot's context overflow (passed through before)", "copilot-cli", "Error: 400 This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", "context_overflow", ""},
		{"Copilot's own error, refined by its rule", "copilot-cli", "Error: Authentication failed with provider at http://127.0.0.1:8787/v1 (HTTP 401).\n  Check your COPILOT_PROVIDER_API_KEY.", "auth_required", "copilot.error_auth.v1"},
		{"an error body the catalogue does not know: unclassified, still a failure", "qwen-code", `error: {"error":{"message":"frobnicator misaligned"}}`, "unclassified", ""},
		{"an error body", "kilo", `error: {"error":{"message":"upstream failed","type":"server_error"}}`, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := textHarness(t, tt.adapter, policy.Default())
			h.start()
			answer, fwd := lastAnswer(t, h, msgChunk(tt.text), endTurn)
			code, msg, pe, _ := providerError(t, answer)
			if code != -32603 || msg != "Error: the agent reported a provider failure as assistant text" {
				t.Errorf("error %d %q", code, msg)
			}
			if tt.code != "" && pe["code"] != tt.code {
				t.Errorf("code %v, want %s", pe["code"], tt.code)
			}
			if tt.rule != "" && pe["rule"] != tt.rule {
				t.Errorf("rule %v, want %s", pe["rule"], tt.rule)
			}
			ev := pe["evidence"].(map[string]any)
			if ev["assistantOutput"] != false || pe["replaySafe"] != true || pe["model"] != "model-a" {
				t.Errorf("evidence %v replaySafe %v model %v: want no output, replay-safe, model-a", ev, pe["replaySafe"], pe["model"])
			}
			r := h.reports[len(h.reports)-1]
			switch {
			case tt.adapter == "copilot-cli":
				// Copilot's signature: its error chunk is a control chunk.
				if len(fwd) != 0 || r.Suppressed != 1 {
					t.Errorf("Copilot's error chunk: forwarded %q, suppressed %d; want suppressed", fwd, r.Suppressed)
				}
			case len(fwd) != 1 || !strings.Contains(fwd[0], "agent_message_chunk"):
				t.Errorf("the error line is forwarded as it came: %q", fwd)
			}
			if r.Outcome != guard.OutcomeRewritten {
				t.Errorf("outcome %s", r.Outcome)
			}
		})
	}
}

// False positives stay answers: prose that starts like an error line,
// compiler output the assistant quotes, an error line after other text
// (for adapters that do not report errors as their own chunk), and a
// Cursor text its exclusive rule refuses.
func TestErrorLineFalsePositivesPass(t *testing.T) {
	for _, tt := range []struct {
		name, adapter string
		frames        []string
	}{
		{"prose answer", "brand-new-agent", []string{msgChunk("Error: I could not find the file you mentioned. Could you check the path?")}},
		{"prose without a pronoun the catalogue does not know", "brand-new-agent", []string{msgChunk("Error: the config file is missing a closing brace on line 12.")}},
		{"quoted compiler output", "claude-agent-acp", []string{msgChunk("error: could not compile `foo` due to 2 previous errors")}},
		{"a number that is not a status", "brand-new-agent", []string{msgChunk("Error: 404 means the route is wrong.")}},
		{"a count that is not a status", "gemini-cli", []string{msgChunk("Error: 500 lines were too many for one file.")}},
		{"compiler output with a location", "codex-acp", []string{msgChunk("error[E0308]: mismatched types\n --> src/main.rs:2:5")}},
		{"an explanation with code", "brand-new-agent", []string{msgChunk("Error: 404 means the route is wrong.\n\nFix it like this:\n```go\nhttp.Handle(\"/v1\", h)\n```")}},
		{"text before the error line", "brand-new-agent", []string{msgChunk("Here is what happened."), msgChunk("Error: 503 Service Unavailable")}},
		{"Cursor's rule vetoes a cancellation", "cursor-acp", []string{msgChunk("Error: RetriableError: context canceled")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := textHarness(t, tt.adapter, policy.Default())
			h.start()
			answer, _ := lastAnswer(t, h, append(tt.frames, endTurn)...)
			if answer != endTurn {
				t.Errorf("answer changed: %s", answer)
			}
			if r := h.reports[len(h.reports)-1]; r.Outcome != guard.OutcomePassed || r.Silent != "" {
				t.Errorf("report %+v: want passed, not flagged", r)
			}
		})
	}
}

// Thoughts and tool calls make an error-line turn unsafe to replay; they
// do not veto the projection. A replay-safe error line is retried by the
// policy.
func TestErrorLineRecovery(t *testing.T) {
	h, _ := textHarness(t, "brand-new-agent", mustPolicy(t, retryEverything))
	h.start()
	answer, _ := lastAnswer(t, h, thought("calling the API"), toolCallFrame(), msgChunk("Error: 503 Service Unavailable"), endTurn)
	_, _, pe, _ := providerError(t, answer)
	if pe["replaySafe"] != false || pe["recovery"].(map[string]any)["reason"] != "unsafe" {
		t.Errorf("replaySafe %v recovery %v: want unsafe", pe["replaySafe"], pe["recovery"])
	}

	h, _ = textHarness(t, "brand-new-agent", mustPolicy(t, retryEverything))
	h.start()
	h.agent("%s", msgChunk("Error: 503 Service Unavailable"))
	h.agent("%s", endTurn)
	h.clientFrames()
	h.v.Advance(time.Second) // no jitter in this harness: the whole 1 s backoff
	if got := h.agentFrames(); len(got) != 1 || !strings.Contains(got[0], `"session/prompt"`) {
		t.Fatalf("agent got %q, want the retried prompt", got)
	}
}

func toolCallFrame() string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read","status":"in_progress"}}}`
}

// A turn of nothing but the agent's retry notes: the failure the latest
// note names (never recovered: no error followed, and the agent may still
// be retrying), or — when the notes name nothing known — a silent empty
// success that says how many notes there were.
func TestNotesOnlyTurn(t *testing.T) {
	h, _ := textHarness(t, "brand-new-agent", mustPolicy(t, retryEverything))
	h.start()
	answer, fwd := lastAnswer(t, h,
		msgChunk("Attempt 1 failed with status 503. Retrying in 2s..."),
		msgChunk("Attempt 2 failed with status 503. Retrying in 4s..."), endTurn)
	code, msg, pe, _ := providerError(t, answer)
	if code != -32603 || msg != "Error: the agent ended the turn with only its own retry notes" || pe["code"] != "provider_unavailable" {
		t.Errorf("error %d %q code %v", code, msg, pe["code"])
	}
	if pe["recovery"].(map[string]any)["reason"] != policy.ReasonDiagnosticOnly || pe["agentRetries"] != 2.0 || pe["retryAfterMs"] != nil {
		t.Errorf("recovery %v agentRetries %v retryAfterMs %v: want diagnostic_only, 2, none", pe["recovery"], pe["agentRetries"], pe["retryAfterMs"])
	}
	if len(fwd) != 2 {
		t.Errorf("the notes are forwarded: %q", fwd)
	}
	if len(h.agentFrames()) != 0 {
		t.Errorf("a notes-only turn was retried")
	}

	h, _ = textHarness(t, "brand-new-agent", policy.Default())
	h.start()
	answer, _ = lastAnswer(t, h, msgChunk("Retrying (attempt 1/2, waiting 2s)..."), endTurn)
	var res struct {
		Result struct {
			Meta struct {
				AcpGuard struct {
					Silent struct {
						Kind     string `json:"kind"`
						Evidence struct {
							Empty struct {
								RetryNotes int `json:"retryNotes"`
							} `json:"empty"`
						} `json:"evidence"`
					} `json:"silent"`
				} `json:"acpGuard"`
			} `json:"_meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(answer), &res); err != nil || res.Result.Meta.AcpGuard.Silent.Kind != "empty" || res.Result.Meta.AcpGuard.Silent.Evidence.Empty.RetryNotes != 1 {
		t.Errorf("answer %s: want silent empty with retryNotes 1", answer)
	}
	if r := h.reports[len(h.reports)-1]; r.Silent != "empty" || r.AgentRetries != 1 {
		t.Errorf("report %+v: want silent empty, agentRetries 1", r)
	}
}

// Seed 004: a note counts only when it matches the error that follows. A
// "transient" note then a 401 is not retried, whatever the policy says;
// a note of the same class as the error is no obstacle.
func TestDiagnosticMustMatchTheError(t *testing.T) {
	for _, tt := range []struct {
		name, note, err string
		retried         bool
		reason          string
	}{
		{"transient note, then a 401", "Info: Request failed due to a transient API error. Retrying...",
			`{"code":-32603,"message":"Internal error: 401 Unauthorized: invalid x-api-key"}`, false, policy.ReasonDiagnosticMismatch},
		{"transient note, then a quota error", "Retrying in 1s (attempt 1/3): 503 Service Unavailable",
			`{"code":-32603,"message":"Internal error: You exceeded your current quota, please check your plan and billing details."}`, false, policy.ReasonDiagnosticMismatch},
		{"transient note, then a 503", "Retrying in 1s (attempt 1/3): 503 Service Unavailable",
			`{"code":-32603,"message":"Internal error: 503 Service Unavailable"}`, true, policy.ReasonRetry},
		{"a note that names nothing known, then a 503", "Retrying (attempt 1/2, waiting 2s)...",
			`{"code":-32603,"message":"Internal error: 503 Service Unavailable"}`, true, policy.ReasonRetry},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := textHarness(t, "copilot-cli", mustPolicy(t, retryEverything))
			h.start()
			h.agent("%s", msgChunk(tt.note))
			h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, tt.err)
			got := h.clientFrames()
			if tt.retried {
				if len(got) != 2 || !strings.Contains(got[1], `"retry"`) {
					t.Fatalf("client got %q, want the note and a retry notice", got)
				}
				return
			}
			_, _, pe, _ := providerError(t, got[len(got)-1])
			if r := pe["recovery"].(map[string]any)["reason"]; r != tt.reason {
				t.Errorf("recovery reason %v, want %s (%v)", r, tt.reason, pe)
			}
		})
	}
}

// Text after a prompt's answer and before the session's next prompt is
// late output: reported with the answered prompt, never in the next turn.
func TestLateOutputReported(t *testing.T) {
	h, late := textHarness(t, "kilo", policy.Default())
	h.start()
	h.agent("%s", endTurn) // an empty end_turn: the agent is still retrying
	h.agent("%s", msgChunk("Hello! How can "))
	h.agent("%s", msgChunk("I help you today?"))
	if len(*late) != 0 {
		t.Fatalf("late output reported before its window closed: %+v", *late)
	}
	h.client(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"again"}]}}`)
	if len(*late) != 1 || (*late)[0].Chunks != 2 || string((*late)[0].RequestID) != "2" || (*late)[0].SessionID != "s1" {
		t.Fatalf("late output %+v, want 2 chunks for request 2", *late)
	}
	h.agent("%s", msgChunk("A real answer."))
	h.agent(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
	r := h.reports[len(h.reports)-1]
	if r.Outcome != guard.OutcomePassed || r.Silent != "" || r.LateOutput != 0 {
		t.Errorf("the next turn: %+v", r)
	}
	if first := h.reports[0]; first.Silent != "empty" {
		t.Errorf("the answered turn: %+v, want flagged empty", first)
	}
}

// The model is in every ProviderError once the agent told it: from
// session/new, then from the answer to the client's own
// session/set_config_option on the model option.
func TestModelInEveryProviderError(t *testing.T) {
	h, _ := textHarness(t, "kilo", policy.Default())
	h.client(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	h.agent(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1","configOptions":[{"id":"model","name":"Model","category":"model","type":"select","currentValue":"fake/a","options":[{"value":"fake/a","name":"A"},{"value":"fake/b","name":"B"}]}]}}`)
	h.client(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}`)
	h.agent(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error: 503 Service Unavailable"}}`)
	got := h.clientFrames()
	if _, _, pe, _ := providerError(t, got[len(got)-1]); pe["model"] != "fake/a" {
		t.Errorf("model %v, want fake/a (session/new)", pe["model"])
	}
	h.client(`{"jsonrpc":"2.0","id":3,"method":"session/set_config_option","params":{"sessionId":"s1","configId":"model","value":"fake/b"}}`)
	h.agent(`{"jsonrpc":"2.0","id":3,"result":{"configOptions":[{"id":"model","name":"Model","category":"model","type":"select","currentValue":"fake/b","options":[{"value":"fake/a","name":"A"},{"value":"fake/b","name":"B"}]}]}}`)
	h.client(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}`)
	h.agent(`{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"Internal error: 503 Service Unavailable"}}`)
	got = h.clientFrames()
	if _, _, pe, _ := providerError(t, got[len(got)-1]); pe["model"] != "fake/b" {
		t.Errorf("model %v, want fake/b (set_config_option)", pe["model"])
	}
}

// agentRetries: the agent's own visible retries, in the ProviderError of
// the failed attempt and summed over the prompt's attempts in its report.
func TestAgentRetriesReported(t *testing.T) {
	h, _ := textHarness(t, "copilot-cli", policy.Default())
	h.start()
	for range 3 {
		h.agent("%s", msgChunk("Info: Request failed due to a transient API error. Retrying..."))
	}
	answer, _ := lastAnswer(t, h, msgChunk("Error: Failed to get response from the AI model; retried 5 times (total retry wait time: 12.91 seconds) Last error: 500 The server had an error"), endTurn)
	if _, _, pe, _ := providerError(t, answer); pe["agentRetries"] != 5.0 {
		t.Errorf("agentRetries %v, want 5 (stated in the error; 3 notes seen)", pe["agentRetries"])
	}
	if r := h.reports[len(h.reports)-1]; r.AgentRetries != 5 {
		t.Errorf("report agentRetries %d, want 5", r.AgentRetries)
	}
}

// With empty_turn "error", a turn of nothing but unnamed notes is an
// empty_response failure that is not replayed (the agent may still be
// retrying); an empty turn without notes is.
func TestNotesOnlyEmptyTurnError(t *testing.T) {
	doc := mustPolicy(t, `{"empty_turn":"error","transient":{"retry":{"max_retries":2,"initial_interval_seconds":1}}}`)
	h, _ := textHarness(t, "pi-acp", doc)
	h.start()
	answer, _ := lastAnswer(t, h, msgChunk("Retrying (attempt 1/3, waiting 2s)..."), msgChunk("Retry finished, resuming."), endTurn)
	_, _, pe, _ := providerError(t, answer)
	if pe["code"] != "empty_response" || pe["recovery"].(map[string]any)["reason"] != policy.ReasonDiagnosticOnly || pe["agentRetries"] != 1.0 {
		t.Errorf("providerError %v: want empty_response, diagnostic_only, agentRetries 1", pe)
	}
	h, _ = textHarness(t, "pi-acp", doc)
	h.start()
	h.agent("%s", endTurn)
	if got := h.clientFrames(); len(got) != 1 || !strings.Contains(got[0], `"retry"`) {
		t.Errorf("an empty turn without notes: client got %q, want a retry notice", got)
	}
}
