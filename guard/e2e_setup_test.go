package guard_test

import (
	"encoding/json"
	"testing"
)

// setupPE is the part of a set-up providerError the tests check.
type setupPE struct {
	Code     string `json:"code"`
	Class    string `json:"class"`
	Rule     string `json:"rule"`
	Phase    string `json:"phase"`
	Reason   string `json:"reason"`
	Recovery struct {
		Action string `json:"action"`
		Reason string `json:"reason"`
	} `json:"recovery"`
}

// setupError decodes the error of response f and its providerError.
func setupError(t *testing.T, f e2eFrame) (data map[string]json.RawMessage, pe setupPE) {
	t.Helper()
	if f.Error == nil {
		t.Fatalf("not an error response: %s", f.raw)
	}
	var env struct {
		Error struct {
			Data map[string]json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(f.raw, &env); err != nil {
		t.Fatalf("decoding %s: %v", f.raw, err)
	}
	raw, ok := env.Error.Data["providerError"]
	if !ok {
		t.Fatalf("no providerError in %s", f.raw)
	}
	if err := json.Unmarshal(raw, &pe); err != nil {
		t.Fatal(err)
	}
	return env.Error.Data, pe
}

// shSetupAgent answers initialize as gemini-cli and fails session/new the
// way gemini-cli 0.61.0 does without a key
// (testdata/transcripts/real/gemini/no_api_key.jsonl).
const shSetupAgent = `while IFS= read -r line; do
  case "$line" in
  *'"initialize"'*) printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"gemini-cli","version":"0.61.0"}}}' ;;
  *'"session/new"'*) printf '%s\n' '{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Gemini API key is missing or not configured."}}' ;;
  esac
done`

func TestE2ESessionSetupFailureAnnotated(t *testing.T) {
	t.Parallel()
	p := startArgv(t, proxyArgv(t, nil, "sh", "-c", shSetupAgent)...)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n")
	p.until("1")
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}` + "\n")
	frames := p.until("2")
	resp := frames[len(frames)-1]
	if resp.Error.Code != -32000 || resp.Error.Message != "Gemini API key is missing or not configured." {
		t.Errorf("the agent's code and message must stay: got %d %q", resp.Error.Code, resp.Error.Message)
	}
	_, pe := setupError(t, resp)
	if pe.Code != "missing_credentials" || pe.Phase != "session_setup" || pe.Rule != "phrase.missing_credentials.v1" || pe.Recovery.Action != "stop" {
		t.Errorf("providerError: got %+v, want missing_credentials, phase session_setup, recovery stop", pe)
	}
	rest, _ := p.finish()
	if n := len(responsesTo(rest, "2")); n != 0 {
		t.Errorf("session/new answered %d more times", n)
	}
}

// An agent that exits before answering initialize, saying why on stderr.
func TestE2ELaunchFailureClassified(t *testing.T) {
	t.Parallel()
	agent := `IFS= read -r line; echo 'Error: OPENAI_API_KEY not set' >&2; exit 1`
	p := startArgv(t, proxyArgv(t, nil, "sh", "-c", agent)...)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n")
	frames := p.until("1")
	data, pe := setupError(t, frames[len(frames)-1])
	if _, ok := data["agentExit"]; !ok {
		t.Errorf("agentExit missing from %s", frames[len(frames)-1].raw)
	}
	if pe.Code != "missing_credentials" || pe.Class != "hard" || pe.Phase != "launch" || pe.Recovery.Action != "stop" {
		t.Errorf("providerError: got %+v, want missing_credentials (hard), phase launch, recovery stop", pe)
	}
}

// A set-up failure nothing classifies is still annotated, and says why.
func TestE2ESetupUnclassifiedSaysWhy(t *testing.T) {
	t.Parallel()
	agent := `while IFS= read -r line; do
  case "$line" in
  *'"initialize"'*) printf '%s\n' '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"frobnicator misaligned"}}' ;;
  esac
done`
	p := startArgv(t, proxyArgv(t, nil, "sh", "-c", agent)...)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n")
	frames := p.until("1")
	_, pe := setupError(t, frames[len(frames)-1])
	if pe.Code != "unclassified" || pe.Reason != "no_match" || pe.Phase != "session_setup" {
		t.Errorf("providerError: got %+v, want unclassified with reason no_match, phase session_setup", pe)
	}
}
