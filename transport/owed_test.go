package transport_test

import (
	"context"
	"encoding/json"
	"github.com/acp-guard/acp-guard/internal/platform"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/syncio"
	"github.com/acp-guard/acp-guard/transport"
)

// heldInput is a real pipe whose reads are held until acp-guard asks how
// many bytes wait on it, which it does only when the session has ended:
// so the requests the client sent are still unread when the agent's exit
// ends the session, whatever the machine's speed.
type heldInput struct {
	f    *os.File
	once sync.Once
	open chan struct{}
}

func (h *heldInput) Read(p []byte) (int, error) {
	<-h.open
	return h.f.Read(p)
}

func (h *heldInput) SyscallConn() (platform.RawConn, error) {
	h.once.Do(func() { close(h.open) })
	return h.f.SyscallConn()
}

// TestRunAnswersWhatTheClientSentBeforeTheEnd: requests the client had
// written when the agent's exit ended the session, still unread by
// acp-guard, are each answered once, with the agent's exit; an incomplete
// last line is not waited for.
func TestRunAnswersWhatTheClientSentBeforeTheEnd(t *testing.T) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	defer inW.Close()
	var sent strings.Builder
	for _, id := range []string{"1", "2", `"three"`} {
		sent.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{}}` + "\n")
	}
	sent.WriteString(`{"jsonrpc":"2.0","id":4,"meth`) // never finished
	if _, err := inW.WriteString(sent.String()); err != nil {
		t.Fatal(err)
	}
	in := &heldInput{f: inR, open: make(chan struct{})}
	var out syncio.Buffer
	res, err := transport.Run(context.Background(), transport.Options{
		Argv:   []string{"sh", "-c", "exit 3"},
		Grace:  time.Hour, // the test ends only if nothing waits for the incomplete line
		Stdin:  in,
		Stdout: &out,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Exit.Code != 3 {
		t.Errorf("exit code %d, want 3", res.Exit.Code)
	}
	answers := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code int `json:"code"`
				Data struct {
					AgentExit struct {
						Code int `json:"code"`
					} `json:"agentExit"`
				} `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("client got %q: %v", line, err)
		}
		answers[string(m.ID)]++
		if m.Error == nil || m.Error.Code != -32603 || m.Error.Data.AgentExit.Code != 3 {
			t.Errorf("id %s answered %s, want -32603 with agentExit code 3", m.ID, line)
		}
	}
	for _, id := range []string{"1", "2", `"three"`} {
		if answers[id] != 1 {
			t.Errorf("id %s answered %d times, want once (client got %q)", id, answers[id], out.String())
		}
	}
	if len(answers) != 3 {
		t.Errorf("answers %v, want ids 1, 2 and \"three\" only", answers)
	}
}
