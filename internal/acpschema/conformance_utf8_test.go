package acpschema_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// TestSchemaInvalidUTF8FromAgent: an agent's error message and data carry
// bytes that are not UTF-8. The agent's error is annotated (a frame
// acp-guard writes), and what the client reads is valid UTF-8, valid JSON
// and valid ACP: each invalid byte became U+FFFD, the rest of the agent's
// message stayed.
func TestSchemaInvalidUTF8FromAgent(t *testing.T) {
	t.Parallel()
	agent := `while read -r l; do
case "$l" in
*'"initialize"'*) printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}';;
*'"session/new"'*) printf '%s\n' '{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s-1"}}';;
*'"session/prompt"'*) printf '{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"upstream said \377\376 then \303 and stopped","data":{"detail":"bad \377 byte"}}}\n';;
esac
done`
	s := onePrompt(t, nil, "!", "sh", "-c", agent)
	var answer []byte
	for _, ln := range s.lines {
		var f frame
		if json.Unmarshal(ln, &f) == nil && f.Method == "" && string(f.ID) == "3" {
			answer = ln
		}
	}
	if answer == nil {
		t.Fatal("no answer to the prompt")
	}
	if !utf8.Valid(answer) || !json.Valid(answer) {
		t.Fatalf("the annotated error is not valid UTF-8 JSON: %q", answer)
	}
	if !bytes.Contains(answer, []byte("upstream said \uFFFD\uFFFD then \uFFFD and stopped")) || !bytes.Contains(answer, []byte(`"providerError"`)) {
		t.Errorf("the agent's message is not kept with U+FFFD for each invalid byte, or not annotated: %s", answer)
	}
	conform(t, s, counts{toClient: 1})
}
