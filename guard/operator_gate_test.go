package guard

import (
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// The gate decides, whoever asks: a held turn whose evidence changed
// since the hold began (the late-activity gate would have stopped it on
// the wire; this is the check at the action itself) or that was not
// replay-safe is never sent again, and only stop is offered.
func TestActionGate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(p *prompt)
		offer  string
	}{
		{"replay-safe and current", func(*prompt) {}, "retry_now,skip,stop"},
		{"output since the hold began", func(p *prompt) { p.turn.Evidence.AssistantOutput = true }, "stop"},
		{"a tool call since", func(p *prompt) { p.turn.Evidence.ToolCalls++ }, "stop"},
		{"late request seen", func(p *prompt) { p.late.requests = true }, "stop"},
		{"the failed turn was not replay-safe", func(p *prompt) { p.last.turn.Evidence.Thoughts = true }, "stop"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := policy.Default()
			doc.Transient = policy.ClassPolicy{Retry: policy.Retry{Enabled: true, MaxRetries: 3, InitialIntervalSeconds: 5}, OnExhausted: policy.OutcomeStop}
			g := New(Config{Identity: observers.Identity{Flag: "claude-agent-acp"}, Engine: catalogue.Default(), Policy: doc, Fallback: []string{"model-b"}})
			v := transport.NewVirtual(epochForTest)
			r := transport.NewRelay(transport.Config{Hooks: g}, v)
			line := func(s string) transport.Line { return transport.Line{Bytes: []byte(s + "\n")} }
			r.FromClient(line(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`))
			r.FromAgent(line(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1","models":{"availableModels":[{"modelId":"model-a","name":"A"},{"modelId":"model-b","name":"B"}],"currentModelId":"model-a"}}}`))
			r.FromClient(line(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`))
			r.FromAgent(line(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}}`))
			var p *prompt
			for _, q := range g.m.prompts {
				p = q
			}
			if p == nil || p.state != stRetryWait {
				t.Fatalf("prompt not held in retry_wait: %+v", p)
			}
			tt.change(p)
			if got := strings.Join(g.acts.offered(r, p), ","); got != tt.offer {
				t.Errorf("offered %s, want %s", got, tt.offer)
			}
			v.TakeAgent()
			err := g.acts.act(r, p, held.ActionRetryNow, ByOperator)
			if tt.offer == "stop" && (err == nil || p.state != stRetryWait || len(v.TakeAgent()) != 0) {
				t.Errorf("retry_now taken (err %v, state %s)", err, p.state)
			}
			if tt.offer != "stop" && (err != nil || p.state != stRetrying) {
				t.Errorf("retry_now refused: %v (state %s)", err, p.state)
			}
		})
	}
}
