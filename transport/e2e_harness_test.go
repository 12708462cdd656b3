package transport_test

// The end-to-end tests run the real acp-guard binary (built once per test
// process by internal/testbin) with real pipes on all three standard
// streams, through the shared harness (internal/acptest), which checks
// after every test that the agent's process group is gone.

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/testbin"
)

// TestMain runs the tests — or, run as `transport.test fault-agent PLAN
// LOG` by acp-guard in the randomized fault test, the hostile agent.
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "fault-agent" {
		os.Exit(runFaultAgent(os.Args[2], os.Args[3]))
	}
	testbin.Main(m)
}

// startGuard runs `acp-guard FLAGS -- AGENT…` through the shared harness
// (internal/acptest: --log-level info, so the log names the agent's pid,
// and a state directory of the test's own).
func startGuard(t *testing.T, flags []string, agent ...string) *acptest.Proc {
	t.Helper()
	return acptest.Guard(t, flags, agent...)
}

// startGuardWith is startGuard with bytes already waiting on stdin when the
// process starts.
func startGuardWith(t *testing.T, preStdin []byte, flags []string, agent ...string) *acptest.Proc {
	t.Helper()
	return acptest.Start(t, acptest.GuardArgv(t, flags, agent...), acptest.Options{Stdin: preStdin})
}

// openSession initializes the demo agent and opens a session.
func openSession(g *acptest.Proc) string {
	_, sid := g.Open()
	return sid
}

// exitData is the data of acp-guard's error for a request the agent left
// unanswered.
type exitData struct {
	AgentExit struct {
		Code       int      `json:"code"`
		Signal     string   `json:"signal"`
		StartError string   `json:"startError"`
		Stderr     []string `json:"stderr"`
	} `json:"agentExit"`
}

func exitOf(t *testing.T, e *acptest.Error) exitData {
	t.Helper()
	var d exitData
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("error data %s: %v", e.Data, err)
	}
	return d
}
