package guard_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/testbin"
)

// The Cursor veto is the catalogue's: chunks it vetoes reach the client as
// the agent wrote them and end_turn passes (issue 12: the observer used to
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
// a DNS error on stderr as in issue 12.
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
	frames := promptTurn(t, startArgv(t, proxyArgv(t, nil, "sh", "-c", shCodexOffline)...))
	resp := responsesTo(frames, "3")
	if len(resp) != 1 {
		t.Fatalf("responses to 3: %d", len(resp))
	}
	live, _ := errorData(t, resp[0])
	envelope := `{"source":"rpc_error","adapter":"codex-acp","rpcCode":-32603,"message":"Internal error",` +
		`"data":{"message":"stream disconnected before completion: error sending request for url (https://api.openai.com/v1/responses)","codex_error_info":"other"},` +
		`"stderr":["ERROR codex_core::client: dns error: failed to lookup address information: Temporary failure in name resolution"]}`
	cmd := exec.Command(testbin.Path(t), "classify")
	cmd.Stdin = strings.NewReader(envelope)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("acp-guard classify: %v", err)
	}
	var cli e2ePE
	if err := json.Unmarshal(out, &cli); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if live.Code != "network_unavailable" || live.Code != cli.Code || live.Rule != cli.Rule || live.Class != cli.Class {
		t.Errorf("live %s/%s (%s), classify %s/%s (%s); want both network_unavailable", live.Code, live.Rule, live.Class, cli.Code, cli.Rule, cli.Class)
	}
}
