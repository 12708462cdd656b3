package acpschema_test

import (
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acpschema"
)

// The validator must reject what the schema forbids, or the conformance
// tests could not fail.
func TestValidatorRejects(t *testing.T) {
	v := schemaOrSkip(t)
	for _, tt := range []struct {
		name   string
		side   acpschema.Side
		method string
		line   string
		ok     bool
	}{
		{"valid error", acpschema.Agent, "session/prompt", `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"x","data":{"providerError":{}}}}`, true},
		{"valid prompt result", acpschema.Agent, "session/prompt", `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn","_meta":{"acpGuard":{}}}}`, true},
		{"valid thought", acpschema.Agent, "", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"retrying"},"_meta":{"acpGuard":{"retry":{}}}}}}`, true},
		{"valid config option", acpschema.Client, "", `{"jsonrpc":"2.0","id":"acp-guard:1","method":"session/set_config_option","params":{"sessionId":"s","configId":"model","value":"m"}}`, true},
		{"no jsonrpc", acpschema.Agent, "session/prompt", `{"id":3,"result":{"stopReason":"end_turn"}}`, false},
		{"error code a string", acpschema.Agent, "session/prompt", `{"jsonrpc":"2.0","id":3,"error":{"code":"-32603","message":"x"}}`, false},
		{"error without message", acpschema.Agent, "session/prompt", `{"jsonrpc":"2.0","id":3,"error":{"code":-32603}}`, false},
		{"unknown stop reason", acpschema.Agent, "session/prompt", `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"provider_error"}}`, false},
		{"unknown update kind", acpschema.Agent, "", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"retry_notice"}}}`, false},
		{"chunk without content", acpschema.Agent, "", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk"}}}`, false},
		{"prompt without sessionId", acpschema.Client, "", `{"jsonrpc":"2.0","id":"acp-guard:1","method":"session/prompt","params":{"prompt":[]}}`, false},
		{"object id", acpschema.Agent, "session/prompt", `{"jsonrpc":"2.0","id":{},"result":{"stopReason":"end_turn"}}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Validate(tt.side, []byte(tt.line), tt.method)
			if (err == nil) != tt.ok {
				t.Errorf("got %v, want ok=%v", err, tt.ok)
			}
			if err != nil && strings.TrimSpace(err.Error()) == "" {
				t.Error("empty error message")
			}
		})
	}
}
