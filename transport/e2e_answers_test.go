package transport_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EAnswersOnceBothWays: a hostile agent answers the client's
// request twice and answers an id the client never sent; the client
// answers the agent's request twice and answers an id the agent never
// sent. Each side gets exactly one answer per request of its own and
// nothing else; the dropped frames are counted in the log and kept in the
// transcript as suppressed frames.
func TestE2EAnswersOnceBothWays(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(dir, "agent-received")
	rec := filepath.Join(dir, "t.jsonl")
	script := `read -r init
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}'
printf '%s\n' '{"jsonrpc":"2.0","id":1.0,"result":{"protocolVersion":1,"again":true}}'
printf '%s\n' '{"jsonrpc":"2.0","id":41,"result":{}}'
printf '%s\n' '{"jsonrpc":"2.0","id":"1","error":{"code":-32603,"message":"not yours"}}'
printf '%s\n' '{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/x"}}'
while read -r l; do printf '%s\n' "$l" >> "$GOT"; done`
	t.Setenv("GOT", got)
	g := startGuard(t, []string{"--record", rec}, "sh", "-c", script)
	g.send(initialize(1))
	var msgs []rpcMsg
	for {
		m := g.msg()
		msgs = append(msgs, m)
		if m.Method == "fs/read_text_file" {
			break
		}
	}
	g.send(`{"jsonrpc":"2.0","id":7,"result":{"content":"one"}}`+"\n",
		`{"jsonrpc":"2.0","id":7,"result":{"content":"two"}}`+"\n",
		`{"jsonrpc":"2.0","id":8,"result":{"content":"never asked"}}`+"\n")
	g.closeIn()
	msgs = append(msgs, g.restMsgs()...)
	if code := g.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	by := responsesByID(msgs)
	if len(by["1"]) != 1 || len(by) != 1 {
		t.Errorf("client got answers %v; want exactly one, to id 1:\n%s", keys(by), raws(msgs))
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, ln := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m rpcMsg
		if json.Unmarshal([]byte(ln), &m) == nil && m.isResponse() {
			answers = append(answers, ln)
		}
	}
	if len(answers) != 1 || !strings.Contains(answers[0], `"content":"one"`) {
		t.Errorf("agent received answers %q; want only the client's first answer to 7", answers)
	}
	log := g.allStderr()
	for _, want := range []string{"second answer to a request already answered; dropped", "answer to no pending request (never sent or no longer pending); dropped"} {
		if n := strings.Count(log, want); n < 2 {
			t.Errorf("log has %q %d times, want at least 2 (agent and client):\n%s", want, n, log)
		}
	}
	suppressed := 0
	f, err := os.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"suppressed":true`)) && bytes.Contains(sc.Bytes(), []byte(`"id":`)) {
			suppressed++
		}
	}
	if suppressed != 5 {
		t.Errorf("%d suppressed answers in the transcript, want 5 (3 from the agent, 2 from the client)", suppressed)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
