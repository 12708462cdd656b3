package demoagent

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/internal/syncio"
)

func TestInitialize(t *testing.T) {
	for _, tt := range []struct {
		scenario, agentName, want string
	}{
		{"success", "", "demo-agent"},
		{"success", "cursor-acp", "cursor-acp"},
		{"cursor-retriable", "", "cursor-agent"},
		{"codex-error", "", "codex-acp"},
		{"claude-error", "", "@zed-industries/claude-agent-acp"},
		{"gemini-error", "", "gemini-cli"},
	} {
		t.Run(tt.scenario+"/"+tt.agentName, func(t *testing.T) {
			c := startAgent(t, Options{Scenario: tt.scenario, AgentName: tt.agentName})
			m := c.call("initialize", map[string]any{"protocolVersion": 1})
			var r struct {
				ProtocolVersion   int             `json:"protocolVersion"`
				AgentCapabilities json.RawMessage `json:"agentCapabilities"`
				AgentInfo         struct {
					Name, Version string
				} `json:"agentInfo"`
			}
			if err := json.Unmarshal(m.Result, &r); err != nil {
				t.Fatalf("initialize result %s: %v", m.Result, err)
			}
			if r.ProtocolVersion != 1 || r.AgentCapabilities == nil || r.AgentInfo.Version == "" {
				t.Errorf("initialize: got %s, want protocolVersion 1, agentCapabilities, agentInfo.version", m.Result)
			}
			if r.AgentInfo.Name != tt.want {
				t.Errorf("agentInfo.name: got %q, want %q", r.AgentInfo.Name, tt.want)
			}
			if err := c.closeStdin(); err != nil {
				t.Errorf("Run at EOF: got %v, want nil", err)
			}
		})
	}
}

func TestRequests(t *testing.T) {
	c := startAgent(t, Options{})
	if m := c.call("authenticate", map[string]any{"methodId": "x"}); string(m.Result) != "{}" {
		t.Errorf("authenticate: got %s, want {}", m.Result)
	}
	m := c.call("session/new", map[string]any{"cwd": "/tmp", "mcpServers": []any{}})
	var r struct {
		SessionID string `json:"sessionId"`
		Models    struct {
			AvailableModels []struct{ ModelID, Name string } `json:"availableModels"`
			CurrentModelID  string                           `json:"currentModelId"`
		} `json:"models"`
		ConfigOptions []struct {
			ID, Type, Category, CurrentValue string
			Options                          []struct{ Value, Name string }
		} `json:"configOptions"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatal(err)
	}
	if r.SessionID != "sess-1" || r.Models.CurrentModelID != "model-a" || len(r.Models.AvailableModels) != 3 {
		t.Errorf("session/new: got %s, want sess-1 with 3 models, current model-a", m.Result)
	}
	if len(r.ConfigOptions) != 1 || r.ConfigOptions[0].ID != "model" || r.ConfigOptions[0].Type != "select" ||
		r.ConfigOptions[0].Category != "model" || r.ConfigOptions[0].CurrentValue != "model-a" || len(r.ConfigOptions[0].Options) != 3 {
		t.Errorf("session/new configOptions: got %s, want one model select", m.Result)
	}
	if got := c.session(); got != "sess-2" {
		t.Errorf("second session: got %q, want sess-2", got)
	}

	// An unknown notification is ignored: the next response is the next request's.
	c.notify("whatever/notice", map[string]any{})
	c.writeRaw([]byte("not json at all\n\n"))
	for _, tt := range []struct {
		method string
		params any
		want   string // summary of the response
	}{
		{"bogus/method", map[string]any{}, "error -32601 Method not found: bogus/method"},
		{"session/set_model", map[string]any{"sessionId": "sess-1", "modelId": "model-b"}, "result "},
		{"session/set_model", map[string]any{"sessionId": "sess-1", "modelId": "model-z"}, `error -32602 Invalid params: unknown model "model-z"`},
		{"session/set_model", map[string]any{"sessionId": "sess-9", "modelId": "model-b"}, `error -32602 Invalid params: unknown session "sess-9"`},
		{"session/set_config_option", map[string]any{"sessionId": "sess-1", "configId": "model", "value": "model-c"}, "result "},
		{"session/set_config_option", map[string]any{"sessionId": "sess-1", "configId": "mode", "value": "x"}, `error -32602 Invalid params: unknown config option "mode" or value`},
		{"session/set_config_option", map[string]any{"sessionId": "sess-1", "configId": "model", "value": "nope"}, `error -32602 Invalid params: unknown model "nope"`},
		{"session/prompt", map[string]any{"sessionId": "sess-9", "prompt": []any{}}, "error -32602 Invalid params: unknown session sess-9"},
	} {
		id := c.request(tt.method, tt.params)
		line := c.nextLine()
		var m msg
		_ = json.Unmarshal(line, &m)
		if string(m.ID) != string(id) {
			t.Fatalf("%s: got %s, want the response to %s", tt.method, line, id)
		}
		if got := summarize(line); got != tt.want {
			t.Errorf("%s %v: got %q, want %q", tt.method, tt.params, got, tt.want)
		}
	}
	m = c.call("session/set_config_option", map[string]any{"sessionId": "sess-2", "configId": "model", "value": "model-b"})
	if !strings.Contains(string(m.Result), `"currentValue":"model-b"`) {
		t.Errorf("set_config_option result: got %s, want configOptions with currentValue model-b", m.Result)
	}
	if err := c.closeStdin(); err != nil {
		t.Errorf("Run at EOF: got %v, want nil", err)
	}
}

const (
	successThought = "thought: Thinking about the request."
	successText1   = "message: Hello from the demo agent. "
	successText2   = "message: This is the answer."
)

var success = []string{successThought, successText1, successText2, "result end_turn"}

func TestScenarioTurns(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts Options
		want []string
	}{
		{"success", Options{}, success},
		{"echo", Options{Scenario: "echo"}, success},
		{"empty", Options{Scenario: "empty"}, []string{"result end_turn"}},
		{"cursor-retriable", Options{Scenario: "cursor-retriable"}, []string{
			"message: Error: RetriableError: [unavailable] PING timed out", "result end_turn"}},
		{"cursor-retriable --text", Options{Scenario: "cursor-retriable", Text: "Error: RetriableError: boom"}, []string{
			"message: Error: RetriableError: boom", "result end_turn"}},
		{"cursor-stalled", Options{Scenario: "cursor-stalled"}, []string{
			"message: Error: RetriableError: Connection stalled", "result end_turn"}},
		{"cursor-incident", Options{Scenario: "cursor-incident"}, []string{
			"thought: Let me look at the file.", `tool_call call-1 "Read File" in_progress`,
			"message: Error: RetriableError: [unavailable] PING timed out", "result end_turn"}},
		{"cursor-resumed", Options{Scenario: "cursor-resumed"}, []string{
			"message: Error: RetriableError: [unavailable] PING timed out", "message: Here is the answer", "result end_turn"}},
		{"codex-error", Options{Scenario: "codex-error"}, []string{"error -32603 Internal error"}},
		{"claude-error", Options{Scenario: "claude-error"}, []string{
			`error -32603 Internal error: API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_demo_529"}`}},
		{"gemini-error", Options{Scenario: "gemini-error"}, []string{
			`error 429 {"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}`}},
		{"auth-error", Options{Scenario: "auth-error"}, []string{"error -32000 Authentication required"}},
		{"auth-error claude", Options{Scenario: "auth-error", AgentName: "claude-agent-acp"}, []string{
			"error -32603 Internal error: Invalid API key · Fix external API key"}},
		{"context-overflow claude", Options{Scenario: "context-overflow", AgentName: "claude-agent-acp"}, []string{
			"error -32603 Internal error: Prompt is too long"}},
		{"context-overflow gemini", Options{Scenario: "context-overflow", AgentName: "gemini-cli"}, []string{
			`error 400 {"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`}},
		{"unknown-error", Options{Scenario: "unknown-error"}, []string{"error -32603 Internal error"}},
		{"text-then-fail", Options{Scenario: "text-then-fail"}, []string{"message: Partial answer before the failure.", "error -32603 Internal error"}},
		{"text-then-fail cursor", Options{Scenario: "text-then-fail", AgentName: "cursor-agent"}, []string{"message: Partial answer before the failure.", "error -32603 Internal error"}},
		{"fail-model on model-a", Options{Scenario: "fail-model"}, []string{"error -32603 Internal error"}},
		{"non-json", Options{Scenario: "non-json"}, []string{
			"message: before the noise ", "raw this is not json {", "message: between the noise ",
			"raw this is not json {\r", "raw ", "message: after the noise", "result end_turn"}},
		{"ignore-term", Options{Scenario: "ignore-term"}, success},
		{"grandchild", Options{Scenario: "grandchild", Grandchild: []string{"true"}}, success},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := startAgent(t, tt.opts)
			id := c.prompt(c.session())
			if got := c.turn(id); !slices.Equal(got, tt.want) {
				t.Errorf("turn:\ngot  %q\nwant %q", got, tt.want)
			}
			c.cancel()
			if err := c.wait(); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Run: got %v, want nil or context.Canceled", err)
			}
		})
	}
}

func TestUnknownScenarioAndKind(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{Scenario: "nope"}, `unknown scenario "nope"`},
		{Options{Scenario: "fail-then-succeed", Error: "bad"}, `unknown error kind "bad"`},
	} {
		err := Run(context.Background(), tt.opts, strings.NewReader(""), &syncio.Buffer{}, &syncio.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Run(%+v): got %v, want an error containing %q", tt.opts, err, tt.want)
		}
	}
}

func TestCrash(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want ExitError
	}{
		{Options{Scenario: "crash"}, ExitError{Code: 3}},
		{Options{Scenario: "crash", ExitCode: 42}, ExitError{Code: 42}},
		{Options{Scenario: "crash-signal"}, ExitError{Signal: platform.SIGKILL}},
	} {
		t.Run(tt.opts.Scenario, func(t *testing.T) {
			c := startAgent(t, tt.opts)
			c.prompt(c.session())
			if got := summarize(c.nextLine()); got != "message: Working on it" {
				t.Errorf("first frame: got %q, want the message chunk", got)
			}
			err := c.wait()
			var e *ExitError
			if !errors.As(err, &e) || *e != tt.want {
				t.Fatalf("Run: got %v, want %+v", err, tt.want)
			}
			if line, ok := <-c.lines; ok {
				t.Errorf("after the crash: got %q, want stdout closed", line)
			}
			if !strings.Contains(c.stderr.String(), "fatal: simulated crash") {
				t.Errorf("stderr: got %q, want the crash line", c.stderr.String())
			}
		})
	}
}
