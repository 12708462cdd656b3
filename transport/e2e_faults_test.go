package transport_test

// The fault matrix (docs/RELIABILITY.md), transport side: hostile agents, signals and
// slow clients driven through the built binary over real pipes. Each test
// names the fault it plays; each fails without the fix it proves.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/platform"
)

// checkFrames checks that every line of out is one complete JSON object
// ending in a newline: frames stay frames.
func checkFrames(t *testing.T, out []byte) []acptest.Frame {
	t.Helper()
	var msgs []acptest.Frame
	for _, ln := range bytes.SplitAfter(out, []byte("\n")) {
		if len(ln) == 0 {
			continue
		}
		if ln[len(ln)-1] != '\n' {
			t.Errorf("stdout ends with an unterminated line %q", acptest.Trunc(ln, 200))
		}
		m, err := acptest.Parse(ln)
		if err != nil {
			t.Errorf("stdout line is not one JSON frame: %v: %q", err, acptest.Trunc(ln, 200))
			continue
		}
		m.Raw = ln
		msgs = append(msgs, m)
	}
	return msgs
}

// TestE2EFramesStayFrames: the agent's last frame without a newline is
// forwarded with one; a fragment (agent killed or exiting mid-frame) is
// never forwarded, and acp-guard's own answers start on a fresh line.
func TestE2EFramesStayFrames(t *testing.T) {
	const answer = `{"jsonrpc":"2.0","id":1,"result":{}}`
	for _, tt := range []struct {
		name     string
		script   string
		requests int
		wantCode int
		want     string // exact stdout, when set
		wantLog  string
	}{
		{name: "complete frame at EOF", script: `read -r a; printf '%s' '` + answer + `'`, requests: 1, want: answer + "\n"},
		{name: "fragment at exit", script: `read -r a; read -r b; printf '{"jsonrpc":"2.0","id":1,"result":{"text":"cut'; exit 3`,
			requests: 2, wantCode: 3, wantLog: "line cut off at end of input"},
		{name: "killed mid-frame", script: `read -r a; printf '{"jsonrpc":"2.0","method":"session/update","params":{"x":'; kill -KILL $$`,
			requests: 1, wantCode: 137, wantLog: "line cut off at end of input"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := startGuard(t, nil, "sh", "-c", tt.script)
			var ids []string
			for i := 1; i <= tt.requests; i++ {
				g.Send(acptest.Request(i, "x/ask", ""))
				ids = append(ids, strconv.Itoa(i))
			}
			out := g.RestBytes()
			if code := g.Wait(); code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			if tt.want != "" && string(out) != tt.want {
				t.Errorf("stdout %q, want %q", out, tt.want)
			}
			checkAnsweredOnce(t, checkFrames(t, out), ids...)
			if log := g.AllStderr(); !strings.Contains(log, tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, log)
			}
		})
	}
}

// TestE2EClientFramesStayFrames: the same rules from the client's side.
// The agent (cat into a file) must receive the complete last frame with
// its newline and never the fragment; a fragment whose id can be read is
// answered with a parse error.
func TestE2EClientFramesStayFrames(t *testing.T) {
	const first = `{"jsonrpc":"2.0","method":"x/a","params":{}}` + "\n"
	const last = `{"jsonrpc":"2.0","method":"x/last","params":{}}`
	for _, tt := range []struct {
		name    string
		tail    string
		want    string // what the agent receives
		answers map[string]int
	}{
		{name: "complete frame at EOF", tail: last, want: first + last + "\n"},
		{name: "fragment with an id", tail: `{"jsonrpc":"2.0","id":9,"method":"x/cut","params":{"a":`, want: first,
			answers: map[string]int{"9": -32700}},
		{name: "fragment without id", tail: `{"jsonrpc":"2.0","method":"x/cu`, want: first},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "agent-stdin")
			g := startGuard(t, nil, "sh", "-c", `cat > "$1"`, "sh", file)
			g.Send(first, tt.tail)
			g.CloseStdin()
			msgs := checkFrames(t, g.RestBytes())
			if code := g.Wait(); code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("the agent received %q, want %q", got, tt.want)
			}
			var ids []string
			for id := range tt.answers {
				ids = append(ids, id)
			}
			for id, m := range checkAnsweredOnce(t, msgs, ids...) {
				if m.Error == nil || m.Error.Code != tt.answers[id] {
					t.Errorf("id %s answered %s, want error %d", id, m.Raw, tt.answers[id])
				}
			}
		})
	}
}

// TestE2ESlowClientGetsTheAnswer: the agent streams ~400 KB, answers the
// prompt and exits at once while the client reads at ~80 KB/s. The client
// must get every chunk and the agent's own answer — not an "agent exited"
// error — because the drain period after the exit counts from the last
// byte read, not from the exit.
func TestE2ESlowClientGetsTheAnswer(t *testing.T) {
	const chunks, size = 400, 1024
	g := startGuard(t, []string{"--state-dir", t.TempDir()}, demoAgent(t, "stream-exit", "--count", strconv.Itoa(chunks), "--size", strconv.Itoa(size))...)
	sid := openSession(g)
	g.Send(acptest.Prompt(3, sid))
	// Read slowly: 8 KiB every 100 ms. This sets the pace of the client;
	// nothing is asserted about time.
	var out []byte
	buf := make([]byte, 8<<10)
	for {
		n, err := g.Out.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code := g.Wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	msgs := checkFrames(t, out)
	n := 0
	for _, m := range msgs {
		if m.Method == "session/update" {
			n++
		}
	}
	if n != chunks {
		t.Errorf("got %d chunks, want %d", n, chunks)
	}
	m := checkAnsweredOnce(t, msgs, "3")["3"]
	var res struct{ StopReason string }
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.StopReason != "end_turn" {
		t.Errorf("prompt answered %s, want the agent's end_turn", acptest.Trunc(m.Raw, 400))
	}
}

// TestE2EAgentClosesStdout: an agent that closes its stdout and keeps
// running can answer nothing: its pending prompt is answered at once with
// a classified ProviderError (agent_transport_lost), a later request is
// answered too, and the agent is terminated after the grace period.
func TestE2EAgentClosesStdout(t *testing.T) {
	g := startGuard(t, []string{"--grace", "2s", "--state-dir", t.TempDir()}, demoAgent(t, "close-stdout")...)
	sid := openSession(g)
	g.Send(acptest.Prompt(3, sid))
	msgs := g.Until("3")
	m := msgs[len(msgs)-1]
	if m.Error == nil || m.Error.Code != -32603 {
		t.Fatalf("prompt answered %s, want -32603", m.Raw)
	}
	var data struct {
		ProviderError struct {
			Code  string `json:"code"`
			Class string `json:"class"`
		} `json:"providerError"`
		AgentExit struct {
			OutputClosed bool `json:"outputClosed"`
		} `json:"agentExit"`
	}
	if err := json.Unmarshal(m.Error.Data, &data); err != nil {
		t.Fatalf("error data %s: %v", m.Error.Data, err)
	}
	if data.ProviderError.Code != "agent_transport_lost" || data.ProviderError.Class != "transient" || !data.AgentExit.OutputClosed {
		t.Errorf("error data %s, want providerError agent_transport_lost/transient and agentExit.outputClosed", m.Error.Data)
	}
	g.Send(acptest.Request(4, "x/after", ""))
	if m := g.Until("4"); m[len(m)-1].Error == nil {
		t.Errorf("request after the loss answered %s, want an error", m[len(m)-1].Raw)
	}
	// The client keeps its stdin open: the agent goes by the escalation.
	if code := g.Wait(); code != 143 {
		t.Errorf("exit code %d, want 143 (the agent terminated by SIGTERM)", code)
	}
	log := g.AllStderr()
	for _, s := range []string{"agent closed its stdout but still runs", "agent still running after grace; sending SIGTERM"} {
		if !strings.Contains(log, s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}
}

// TestE2ESignalStopsRetries: SIGTERM to acp-guard while it waits to retry
// a failed prompt, with an agent that ignores SIGTERM: the signal is
// forwarded once, no retry reaches the agent after it, the client gets
// one answer, the agent is killed after the grace period and the exit code
// says so (137).
func TestE2ESignalStopsRetries(t *testing.T) {
	// interval 1: the retry's timer fires during the grace period and the
	// relay refuses to send it; interval 600: the held prompt is answered
	// when the signal arrives, not when the agent is finally gone.
	for _, interval := range []int{1, 600} {
		t.Run(fmt.Sprintf("retry_after_%ds", interval), func(t *testing.T) { signalStopsRetries(t, interval) })
	}
}

func signalStopsRetries(t *testing.T, interval int) {
	pol := filepath.Join(t.TempDir(), "policy.json")
	// With a retry after 1 s and a grace period of 3 s, the retry would
	// reach the agent before it is killed without the refusal.
	err := os.WriteFile(pol, []byte(`{"version":1,
"transient":{"retry":{"enabled":true,"max_retries":3,"initial_interval_seconds":`+fmt.Sprint(interval)+`},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	g := startGuard(t, []string{"--policy", pol, "--grace", "3s", "--state-dir", t.TempDir()}, demoAgent(t, "fail-ignore-term")...)
	sid := openSession(g)
	g.Send(acptest.Prompt(3, sid))
	// The retry notice says the wait has begun.
	for {
		m := g.Next()
		if m.Method == "session/update" && strings.Contains(string(m.Params), "retrying") {
			break
		}
		if m.IsResponse() {
			t.Fatalf("prompt answered before a retry was scheduled: %s", m.Raw)
		}
	}
	if err := platform.Kill(g.Pid(), platform.SIGTERM); err != nil {
		t.Fatal(err)
	}
	g.WaitStderr("forwarding signal to agent")
	if err := platform.Kill(g.Pid(), platform.SIGINT); err != nil { // a second signal: not forwarded again
		t.Fatal(err)
	}
	msgs := checkFrames(t, g.RestBytes())
	if code := g.Wait(); code != 137 {
		t.Errorf("exit code %d, want 137 (the TERM-ignoring agent killed)", code)
	}
	m := checkAnsweredOnce(t, msgs, "3")["3"]
	if m.Error == nil {
		t.Fatalf("prompt answered %s, want an error", m.Raw)
	}
	// The held prompt is answered with the failure it was waiting to
	// recover from, classified, and the reason says why recovery stopped.
	var data struct {
		ProviderError struct {
			Code     string `json:"code"`
			Class    string `json:"class"`
			Recovery struct {
				Action string `json:"action"`
				Reason string `json:"reason"`
			} `json:"recovery"`
		} `json:"providerError"`
	}
	if err := json.Unmarshal(m.Error.Data, &data); err != nil {
		t.Fatalf("error data %s: %v", m.Error.Data, err)
	}
	pe := data.ProviderError
	if pe.Class != "transient" || pe.Recovery.Action != "stop" || pe.Recovery.Reason != "shutting_down" {
		t.Errorf("providerError code %q class %q recovery %+v, want the transient failure stopped with reason shutting_down (%s)",
			pe.Code, pe.Class, pe.Recovery, m.Raw)
	}
	log := g.AllStderr()
	if n := strings.Count(log, "demo-agent: prompt "); n != 1 {
		t.Errorf("the agent received %d prompts, want 1 (no retry after the signal):\n%s", n, log)
	}
	if n := strings.Count(log, "forwarding signal to agent"); n != 1 {
		t.Errorf("signal forwarded %d times, want once:\n%s", n, log)
	}
	for _, s := range []string{"signal received while stopping", "agent ignored SIGTERM; sending SIGKILL"} {
		if !strings.Contains(log, s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}
}

// TestE2EGuardKilledTakesTermIgnoringAgent: an agent that ignores SIGTERM
// does not outlive a SIGKILLed acp-guard (the parent-death signal is
// SIGKILL).
func TestE2EGuardKilledTakesTermIgnoringAgent(t *testing.T) {
	g := startGuard(t, nil, demoAgent(t, "ignore-term")...)
	pid := g.AgentPID()
	g.WaitStderr("ignoring SIGTERM")
	if err := platform.Kill(g.Pid(), platform.SIGKILL); err != nil {
		t.Fatal(err)
	}
	g.Wait()
	if err := acptest.WaitProcessGone(pid); err != nil {
		t.Errorf("agent %d outlived a killed acp-guard: %v", pid, err)
		_ = platform.Kill(pid, platform.SIGKILL)
	}
}

var orphanRe = regexp.MustCompile(`orphan (\d+)`)

// TestE2EOrphansReaped: acp-guard is a child subreaper: an orphan the
// agent leaves is re-parented to acp-guard (not init), and when it dies it
// is reaped, not left <defunct>.
func TestE2EOrphansReaped(t *testing.T) {
	g := startGuard(t, nil, "sh", "-c", `(sleep 300 </dev/null >/dev/null 2>&1 & echo "orphan $!" >&2); exec cat`)
	m := orphanRe.FindStringSubmatch(g.WaitStderr("orphan "))
	pid, _ := strconv.Atoi(m[1])
	// The subshell that started it has exited: the orphan's parent is now
	// acp-guard. Re-parenting follows the subshell's exit; wait for it.
	if err := waitFor(func() bool { _, pp, _, ok := acptest.ProcStat(pid); return !ok || pp == g.Pid() }); err != nil {
		_, pp, _, _ := acptest.ProcStat(pid)
		t.Fatalf("orphan %d has parent %d, want acp-guard %d (a child subreaper)", pid, pp, g.Pid())
	}
	if err := platform.Kill(pid, platform.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// While acp-guard runs, the dead orphan must be reaped, not a zombie.
	if err := waitFor(func() bool { state, _, _, ok := acptest.ProcStat(pid); return !ok || state != "Z" }); err != nil {
		t.Errorf("orphan %d is still <defunct> under acp-guard", pid)
	}
	g.CloseStdin()
	if code := g.Wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

// waitFor polls cond until it holds; the deadline is a hang guard.
func waitFor(cond func() bool) error {
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// TestE2EIDsMatchedByValue: an agent that echoes a numeric id spelled
// differently (2.0 for 2, as JavaScript may) answers the request: the
// client gets exactly one answer, carrying its own id bytes.
func TestE2EIDsMatchedByValue(t *testing.T) {
	for _, tt := range []struct{ client, agent string }{
		{"2", "2.0"},
		{"2", "2e0"},
		{"0", "-0"},
		{"2.0", "2"},
		{"12345678901234567890", "1.2345678901234567890e19"},
	} {
		t.Run(tt.client+"/"+tt.agent, func(t *testing.T) {
			answer := `{"jsonrpc":"2.0","id":` + tt.agent + `,"result":{"ok":true}}`
			g := startGuard(t, nil, "sh", "-c", `read -r a; echo '`+answer+`'; exec cat`)
			g.Send(`{"jsonrpc":"2.0","id":` + tt.client + `,"method":"x/ask","params":{}}` + "\n")
			first := g.Line()
			g.CloseStdin()
			rest := g.RestBytes()
			if code := g.Wait(); code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
			want := `{"jsonrpc":"2.0","id":` + tt.client + `,"result":{"ok":true}}` + "\n"
			if string(first) != want {
				t.Errorf("got %q, want %q", first, want)
			}
			if len(rest) != 0 {
				t.Errorf("a second answer: %q", acptest.Trunc(rest, 300))
			}
		})
	}
}

// TestE2EDuplicateProxyAnswerDropped: the agent answers the proxy's retry
// twice; the second answer (id "acp-guard:N") never reaches the client.
func TestE2EDuplicateProxyAnswerDropped(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "policy.json")
	err := os.WriteFile(pol, []byte(`{"version":1,
"transient":{"retry":{"enabled":true,"max_retries":2,"initial_interval_seconds":1},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	g := startGuard(t, []string{"--policy", pol, "--state-dir", t.TempDir()}, demoAgent(t, "double-answer", "--fail", "1")...)
	sid := openSession(g)
	g.Send(acptest.Prompt(3, sid))
	msgs := g.Until("3")
	if m := msgs[len(msgs)-1]; m.Error != nil {
		t.Fatalf("prompt answered %s, want the retry's success", m.Raw)
	}
	g.CloseStdin() // the agent wrote both answers before it reads the EOF
	msgs = append(msgs, checkFrames(t, g.RestBytes())...)
	if code := g.Wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if log := g.AllStderr(); !strings.Contains(log, "agent answered a proxy request that is not pending; dropped") {
		t.Errorf("log lacks the dropped duplicate:\n%s", log)
	}
	checkAnsweredOnce(t, msgs, "3")
	for _, m := range msgs {
		if bytes.Contains(m.ID, []byte("acp-guard:")) {
			t.Errorf("the proxy's own id reached the client: %s", m.Raw)
		}
	}
}
