package guard_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// The Cursor veto is the catalogue's: chunks it vetoes reach the client as
// the agent wrote them and end_turn passes (the observer used to
// rewrite "[deadline_exceeded]" and let "retry limit reached" through to a
// classifier that vetoed it).
func TestE2ECursorVetoIsTheCatalogues(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"Error: RetriableError: [deadline_exceeded] stream timed out",
		"Error: RetriableError: retry limit reached",
		"Error: RetriableError: context_canceled",
	} {
		t.Run(text, func(t *testing.T) {
			t.Parallel()
			args := []string{"--scenario", "cursor-retriable", "--text", text}
			want := directTurn(t, args...)
			got := turnBytes(promptTurn(t, startProxy(t, nil, args...)))
			if !bytes.Equal(got, want) {
				t.Errorf("through acp-guard:\n%s\nwant the agent's bytes:\n%s", got, want)
			}
		})
	}
}

// A non-text chunk after the control chunk is output: the marker clears,
// the turn's end_turn passes, only the control chunk is suppressed.
func TestE2ECursorImageChunkIsOutput(t *testing.T) {
	t.Parallel()
	args := []string{"--scenario", "cursor-then-image"}
	direct := directTurn(t, args...)
	var want []byte
	for _, ln := range bytes.SplitAfter(direct, []byte("\n")) {
		if !bytes.Contains(ln, []byte("RetriableError")) {
			want = append(want, ln...)
		}
	}
	if !bytes.Contains(want, []byte(`"type":"image"`)) || !bytes.Contains(want, []byte(`"end_turn"`)) {
		t.Fatalf("the demo agent's turn lacks the image chunk or end_turn:\n%s", direct)
	}
	got := turnBytes(promptTurn(t, startProxy(t, nil, args...)))
	if !bytes.Equal(got, want) {
		t.Errorf("through acp-guard:\n%s\nwant:\n%s", got, want)
	}
}

// A chunk of non-ASCII whitespace is neither output nor a clearing event:
// the control chunk still turns end_turn into the ProviderError.
func TestE2ECursorUnicodeBlankDoesNotClear(t *testing.T) {
	t.Parallel()
	frames := promptTurn(t, startProxy(t, nil, "--scenario", "cursor-then-blank"))
	pe := checkCursorRewrite(t, frames)
	if pe.Evidence.AssistantOutput {
		t.Errorf("evidence.assistantOutput: got true for a whitespace-only chunk")
	}
	if !pe.ReplaySafe {
		t.Errorf("replaySafe: got false, want true (a blank chunk is not output)")
	}
}

// shCodexOffline answers the prompt as codex-acp 0.16.0 does on a machine
// without network (testdata/transcripts/real/codex/offline_dns.jsonl), with
// a DNS error on stderr as that capture has.
const shCodexOffline = `while IFS= read -r line; do
  case "$line" in
  *'"initialize"'*) printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"codex-acp","version":"0.16.0"}}}' ;;
  *'"session/new"'*) printf '%s\n' '{"jsonrpc":"2.0","id":2,"result":{"sessionId":"sess-1"}}' ;;
  *'"session/prompt"'*) echo 'ERROR codex_core::client: dns error: failed to lookup address information: Temporary failure in name resolution' >&2
    printf '%s\n' '{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error","data":{"message":"stream disconnected before completion: error sending request for url (https://api.openai.com/v1/responses)","codex_error_info":"other"}},"id":3}' ;;
  esac
done`

// The live proxy and `acp-guard classify` (both the built binary) give the
// issue's opening example the same verdict: one evidence path.
func TestE2ELiveAndClassifyAgree(t *testing.T) {
	t.Parallel()
	frames := promptTurn(t, startArgv(t, acptest.GuardArgv(t, nil, "sh", "-c", shCodexOffline)...))
	resp := acptest.ResponsesTo(frames, "3")
	if len(resp) != 1 {
		t.Fatalf("responses to 3: %d", len(resp))
	}
	live, _ := errorData(t, resp[0])
	envelope := `{"source":"rpc_error","adapter":"codex-acp","rpcCode":-32603,"message":"Internal error",` +
		`"data":{"message":"stream disconnected before completion: error sending request for url (https://api.openai.com/v1/responses)","codex_error_info":"other"},` +
		`"stderr":["ERROR codex_core::client: dns error: failed to lookup address information: Temporary failure in name resolution"]}`
	out, stderr, code := acptest.Run(t, []string{acptest.Bin(t), "classify"}, acptest.Options{}, envelope)
	if code != 0 {
		t.Fatalf("acp-guard classify: exit %d: %s", code, stderr)
	}
	var cli e2ePE
	if err := json.Unmarshal([]byte(out), &cli); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if live.Code != "network_unavailable" || live.Code != cli.Code || live.Rule != cli.Rule || live.Class != cli.Class {
		t.Errorf("live %s/%s (%s), classify %s/%s (%s); want both network_unavailable", live.Code, live.Rule, live.Class, cli.Code, cli.Rule, cli.Class)
	}
}

// shCopilotAgent answers the prompt as GitHub Copilot CLI 1.0.102 does when
// its provider keeps failing (testdata/transcripts/real/copilot/
// server_error_500.jsonl): retry notes, one "Error: …" chunk, end_turn.
const shCopilotAgent = `while IFS= read -r line; do
  case "$line" in
  *'"initialize"'*) printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"Copilot","title":"Copilot","version":"1.0.102"}}}' ;;
  *'"session/new"'*) printf '%s\n' '{"jsonrpc":"2.0","id":2,"result":{"sessionId":"sess-1"}}' ;;
  *'"session/prompt"'*) printf '%s\n%s\n%s\n' \
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Info: Request failed due to a transient API error. Retrying..."}}}}' \
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Error: Failed to get response from the AI model; retried 5 times (total retry wait time: 12.91 seconds) Last error: 500 The server had an error while processing your request. Sorry about that!"}}}}' \
    '{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}' ;;
  esac
done`

// Copilot's text-reported failure becomes one ProviderError classified from
// its text; its retry note reaches the client and is not output (the turn
// stays replay-safe).
func TestE2ECopilotTextReportedFailure(t *testing.T) {
	t.Parallel()
	frames := promptTurn(t, startArgv(t, acptest.GuardArgv(t, nil, "sh", "-c", shCopilotAgent)...))
	var notes int
	for _, f := range frames {
		if bytes.Contains(f.Raw, []byte("Error: Failed to get response")) && f.Method != "" {
			t.Errorf("the control chunk reached the client: %s", f.Raw)
		}
		if bytes.Contains(f.Raw, []byte("Retrying...")) {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("retry notes forwarded: %d, want 1", notes)
	}
	resp := acptest.ResponsesTo(frames, "3")
	if len(resp) != 1 || resp[0].Error == nil {
		t.Fatalf("want exactly one error response to the prompt, got %d", len(resp))
	}
	pe, _ := errorData(t, resp[0])
	if pe.Code != "provider_unavailable" || pe.Rule != "copilot.error_server.v1" || pe.Source != "copilot_cli" || !pe.ReplaySafe || pe.Evidence.AssistantOutput {
		t.Errorf("providerError: %+v; want provider_unavailable by copilot.error_server.v1, source copilot_cli, replay-safe, no output", pe)
	}
}
