package guard_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// slowHooks makes the event that handles the agent's answer to a
// session/prompt slow: every clock read in it comes burn later than the
// one before (a loaded machine between the decision, the circuit's Fail,
// the timer and the record). Other events, even through the Ctl captured
// by a timer armed in the slow one, are not slowed.
type slowHooks struct {
	*guard.Guard
	burn time.Duration
	slow *bool // set while the slow event runs (every event runs under the loop's lock)
}

type slowCtl struct {
	transport.Ctl
	h slowHooks
}

func (c slowCtl) Now() time.Time {
	if *c.h.slow {
		time.Sleep(c.h.burn)
	}
	return c.Ctl.Now()
}

// Poster is forwarded: the guard finds it by a type assertion.
func (c slowCtl) Poster() func(func()) {
	return c.Ctl.(interface{ Poster() func(func()) }).Poster()
}

func (h slowHooks) AgentMsg(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	if m.Kind == transport.KindResponse && req != nil && req.Method == "session/prompt" {
		*h.slow = true
		defer func() { *h.slow = false }()
	}
	return h.Guard.AgentMsg(slowCtl{Ctl: c, h: h}, m, req)
}

func (h slowHooks) ProxyResponse(c transport.Ctl, m *transport.Msg, req *transport.Request) {
	if req.Method == "session/prompt" {
		*h.slow = true
		defer func() { *h.slow = false }()
	}
	h.Guard.ProxyResponse(slowCtl{Ctl: c, h: h}, m, req)
}

// TestE2ESlowDecisionAgreesWithCircuit is CI's failure of
// TestE2EEmptyTurnError/retry_empty_again made certain: an empty turn is
// retried after 1 s and, with circuits on, its failure opens the circuit
// for as long. When the event that decides is slow (here every clock
// read in it is 200 ms late), the circuit must still open until the
// retry's own deadline: the retry goes out, comes back empty again, and
// the client gets empty_response / empty_retry_result. With a clock read
// per call, the circuit opened later than the deadline, the retry parked
// behind the circuit its own failure had opened, and the client got
// circuit_open.
func TestE2ESlowDecisionAgreesWithCircuit(t *testing.T) {
	t.Parallel()
	doc, err := policy.Parse([]byte(`{"version":1,"empty_turn":"error",
"transient":{"retry":{"enabled":true,"max_retries":1,"initial_interval_seconds":1},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`))
	if err != nil {
		t.Fatal(err)
	}
	st, err := circuit.OpenStore("file", circuit.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := guard.New(guard.Config{
		Identity: observers.Identity{Flag: "demo-agent"},
		Engine:   catalogue.Default(),
		Policy:   doc,
		Circuits: circuit.New(circuit.Config{Store: st}),
	})
	defer g.Close()

	p := acptest.Pipe(t, acptest.Options{}, func(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
		_, err := transport.Run(ctx, transport.Options{
			Argv:  acptest.DemoAgent(t, "--scenario", "empty-then-succeed", "--fail", "5"),
			Grace: 5 * time.Second, Stdin: stdin, Stdout: stdout, Stderr: io.Discard,
			Hooks: slowHooks{Guard: g, burn: 200 * time.Millisecond, slow: new(bool)},
		})
		return err
	})
	_, sid := p.Open()
	p.Send(acptest.Prompt(3, sid))
	frames := p.Until("3")
	var e struct {
		PE struct {
			Code     string `json:"code"`
			Recovery struct {
				Attempt int    `json:"attempt"`
				Reason  string `json:"reason"`
			} `json:"recovery"`
		} `json:"providerError"`
	}
	raw := frames[len(frames)-1].Raw
	if f := frames[len(frames)-1]; f.Error == nil || json.Unmarshal(f.Error.Data, &e) != nil {
		t.Fatalf("answer to the prompt: %s", raw)
	}
	if e.PE.Code != "empty_response" || e.PE.Recovery.Reason != guard.ReasonEmptyRetry || e.PE.Recovery.Attempt != 1 {
		t.Errorf("answer to the prompt: %s; want empty_response after one retry (%s), not parked behind its own circuit", raw, guard.ReasonEmptyRetry)
	}
	if _, err := p.Finish(); err != nil && !strings.Contains(err.Error(), "exit") {
		t.Fatalf("Run: %v", err)
	}
}
