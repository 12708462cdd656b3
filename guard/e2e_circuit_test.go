package guard_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/acp-guard/acp-guard/demoagent"
	"github.com/acp-guard/acp-guard/internal/acptest"
)

// Shared circuits through the built binary: several acp-guard processes,
// one session each, behind one "provider" (the demo agent's outage
// scenario, one agent per process, all pointed at one outage file).

// agentAttempt is one prompt an agent received (the attempts file).
type agentAttempt struct {
	pid, n      int
	model       string
	start, end  int64 // unix nanoseconds
	failed, fin bool
}

// readAttempts parses the attempts file, in arrival order.
func readAttempts(t *testing.T, path string) []*agentAttempt {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*agentAttempt
	open := map[[2]int]*agentAttempt{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			continue // a line being written
		}
		pid, _ := strconv.Atoi(fs[1])
		n, _ := strconv.Atoi(fs[2])
		at, _ := strconv.ParseInt(fs[4], 10, 64)
		k := [2]int{pid, n}
		switch fs[0] {
		case "start":
			a := &agentAttempt{pid: pid, n: n, model: fs[3], start: at}
			open[k] = a
			out = append(out, a)
		case "fail", "ok":
			if a := open[k]; a != nil {
				a.end, a.failed, a.fin = at, fs[0] == "fail", true
			}
		}
	}
	return out
}

// outageCounts are the attempts an agent saw: the clients' own prompts
// (n == 1: one session, one prompt per process) and the guard's retries.
func outageCounts(as []*agentAttempt) (initialFailed, retriesFailed int) {
	for _, a := range as {
		switch {
		case a.failed && a.n == 1:
			initialFailed++
		case a.failed:
			retriesFailed++
		}
	}
	return
}

// waitFor polls cond (reading files the agents write) until it holds; the
// deadline is a hang guard, not an assertion on timing.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(50 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("hang guard: still waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// outageRun starts n proxies with flags around the outage scenario, sends
// one prompt each (all sessions opened first, so that the prompts leave
// together), waits until endOutage says the outage is over (it is given
// the attempts so far), then reads every answer. A nil endOutage reads
// the answers while the outage lasts.
type outageRun struct {
	answers  []acptest.Frame
	attempts []*agentAttempt
	ended    time.Time // when the outage file was removed
	// storeLost counts the proxies that logged the circuit store
	// unavailable: a store call past its timeout (a loaded machine) leaves
	// that session to decide alone, as docs/CIRCUITS.md says it must.
	storeLost int
}

func runOutage(t *testing.T, n int, flags []string, endOutage func([]*agentAttempt) bool) outageRun {
	t.Helper()
	dir := t.TempDir()
	outage, attempts := filepath.Join(dir, "outage"), filepath.Join(dir, "attempts")
	if err := os.WriteFile(outage, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(demoagent.EnvOutageFile, outage)
	t.Setenv(demoagent.EnvAttemptsFile, attempts)
	procs := make([]*acptest.Proc, n)
	for i := range procs {
		procs[i] = startProxy(t, append([]string{"--notices", "off"}, flags...), "--scenario", "outage", "--agent-name", "codex-acp")
	}
	sids := make([]string, n)
	for i, p := range procs {
		_, sids[i] = p.Open()
	}
	for i, p := range procs {
		p.Send(acptest.Prompt(3, sids[i]))
	}
	var r outageRun
	if endOutage != nil {
		waitFor(t, "the end of the outage", func() bool { return endOutage(readAttempts(t, attempts)) })
		if err := os.Remove(outage); err != nil {
			t.Fatal(err)
		}
		r.ended = time.Now()
	}
	for i, p := range procs {
		frames := p.Until("3")
		r.answers = append(r.answers, frames[len(frames)-1])
		rest, _ := p.Finish()
		if k := len(acptest.ResponsesTo(rest, "3")); k != 0 {
			t.Errorf("process %d: prompt 3 answered %d more times", i, k)
		}
		if strings.Contains(p.Stderr.String(), "circuit store unavailable") {
			r.storeLost++
		}
	}
	r.attempts = readAttempts(t, attempts)
	return r
}

// checkOneProbeAtATime: during the outage, every retry that reached an
// agent was the circuit's one probe: retries that failed never overlap
// another retry, and the next retry starts at least the minimum cooldown
// (one second, the policy's least delay) after a failed one ended. Lower
// bounds only: a loaded machine makes the gaps longer, never shorter.
func checkOneProbeAtATime(t *testing.T, as []*agentAttempt) {
	t.Helper()
	var retries []*agentAttempt
	for _, a := range as {
		if a.n > 1 {
			retries = append(retries, a)
		}
	}
	sort.Slice(retries, func(i, j int) bool { return retries[i].start < retries[j].start })
	for i, a := range retries {
		if !a.failed || i+1 == len(retries) {
			continue
		}
		next := retries[i+1]
		if gap := time.Duration(next.start - a.end); gap < time.Second {
			t.Errorf("retry pid %d #%d started %v after the failed retry pid %d #%d ended: a second probe within one cooldown",
				next.pid, next.n, gap, a.pid, a.n)
		}
	}
}

func checkAllSucceeded(t *testing.T, r outageRun) {
	t.Helper()
	for i, f := range r.answers {
		if f.Error != nil || stopReason(t, f) != "end_turn" {
			t.Errorf("process %d: answered %s, want end_turn", i, f.Raw)
		}
	}
}

func TestE2ECircuitsOneProbePerOutage(t *testing.T) {
	const n = 4
	state := filepath.Join(t.TempDir(), "state")
	flags := []string{"--policy", acptest.RetryPolicy(t, 5, 1), "--state-dir", state}
	// The outage ends once two probes failed after every client's own
	// prompt had failed.
	r := runOutage(t, n, flags, func(as []*agentAttempt) bool {
		initial, retries := outageCounts(as)
		return initial == n && retries >= 2
	})
	checkAllSucceeded(t, r)
	checkOneProbeAtATime(t, r.attempts)
	initial, retries := outageCounts(r.attempts)
	t.Logf("%d processes: %d own prompts and %d retries failed during the outage; %d attempts in all", n, initial, retries, len(r.attempts))
	if _, err := os.Stat(filepath.Join(state, "circuits.json")); err != nil {
		t.Errorf("no circuits in the state directory: %v", err)
	}
}

func TestE2ECircuitsNATS(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(30 * time.Second) { // hang guard
		t.Fatal("nats-server not ready")
	}
	url := fmt.Sprintf("nats://127.0.0.1:%d", srv.Addr().(*net.TCPAddr).Port)
	const n = 2
	flags := []string{"--policy", acptest.RetryPolicy(t, 5, 1), "--circuits", url, "--circuit-namespace", "team-a"}
	r := runOutage(t, n, flags, func(as []*agentAttempt) bool {
		initial, retries := outageCounts(as)
		return initial == n && retries >= 2
	})
	checkAllSucceeded(t, r)
	checkOneProbeAtATime(t, r.attempts)
	if _, retries := outageCounts(r.attempts); retries < 2 {
		t.Errorf("failed retries: %d, want at least 2", retries)
	}
}

// A parked session never waits for a cooldown its own schedule would not
// have waited: with one retry each (after 3 s), the session that probes
// fails (exhausted) and re-opens the circuit for the next step (6 s); the
// sessions parked behind its probe learn it within a park poll (2 s), have
// nothing left of their schedule, and get their ProviderError with
// recovery.reason circuit_open and the open circuit at once instead of
// retrying into the outage. Every session is answered exactly once
// either way.
func TestE2ECircuitParkedUntilOwnScheduleEnds(t *testing.T) {
	const n = 3
	state := filepath.Join(t.TempDir(), "state")
	// One jitter seed for every process: their retries are drawn alike
	// and fall due together, so one session probes and the others wait
	// behind it (with seeds of their own the draws can let each probe in
	// turn, within its budget, and none parks out).
	r := runOutage(t, n, []string{"--policy", acptest.RetryPolicy(t, 1, 3), "--state-dir", state, "--jitter-seed", "7"}, nil)
	_, retries := outageCounts(r.attempts)
	parked := 0
	for i, f := range r.answers {
		pe := summaryOf(t, f)
		switch pe.Recovery.Reason {
		case "circuit_open":
			parked++
			if parked == 1 {
				t.Logf("process %d: %s", i, f.Raw)
			}
			if pe.Circuit == nil || pe.Circuit.State == "closed" || pe.Circuit.CooldownUntil == nil ||
				!strings.HasPrefix(pe.Circuit.Key, "default/codex-acp/") {
				t.Errorf("process %d: circuit_open without the open circuit: %s", i, f.Raw)
			}
		case "exhausted":
		default:
			t.Errorf("process %d: answered %s, want exhausted or circuit_open", i, f.Raw)
		}
	}
	t.Logf("%d sessions: %d retries reached the agents, %d parked out", n, retries, parked)
	if retries+parked != n {
		t.Errorf("retries that reached the agents %d, sessions parked out %d: want %d in all", retries, parked, n)
	}
	// With the store answering every proxy and the sessions' own failures
	// within 2 s of each other (their retries due within 2 s, the same
	// draw), the first retry's probe fails and re-opens the circuit for
	// the schedule's next step (6 s), beyond what the others' schedules
	// have left (3 s and budgetSlack): they park out. A proxy whose store
	// call outlived its timeout (logged) decides alone, and a session
	// started later than that by a loaded machine may probe in turn: then
	// no count is promised, and the checks above are the rule.
	var first, last int64
	for _, a := range r.attempts {
		if a.n == 1 {
			if first == 0 || a.end < first {
				first = a.end
			}
			last = max(last, a.end)
		}
	}
	if spread := time.Duration(last - first); parked == 0 && r.storeLost == 0 && spread < 2*time.Second {
		t.Errorf("no session parked out, with the store answering every proxy and their failures within %v", spread)
	}
}

// skipPolicyFile: no retries, no waits; exhausted failures skip to the
// next fallback model.
func skipPolicyFile(t *testing.T) string {
	return acptest.WriteFile(t, "skip.json", `{"version":1,
"transient":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"skip"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"skip"}}`)
}

type e2eSummary struct {
	Attempts []struct {
		Model         string  `json:"model"`
		Code          string  `json:"code"`
		Class         string  `json:"class"`
		DurationMs    *int64  `json:"durationMs"`
		CooldownUntil *string `json:"cooldownUntil"`
	} `json:"attempts"`
	SoonestRetryAt *string `json:"soonestRetryAt"`
	Circuit        *struct {
		Key           string  `json:"key"`
		State         string  `json:"state"`
		CooldownUntil *string `json:"cooldownUntil"`
	} `json:"circuit"`
	Recovery struct {
		Reason string `json:"reason"`
	} `json:"recovery"`
}

func summaryOf(t *testing.T, f acptest.Frame) e2eSummary {
	t.Helper()
	_, data := errorData(t, f) // checks there is a providerError
	_ = data
	var d struct {
		PE e2eSummary `json:"providerError"`
	}
	if err := json.Unmarshal(f.Error.Data, &d); err != nil {
		t.Fatal(err)
	}
	return d.PE
}

// Three failing models: the chain ends in one ProviderError that lists
// every attempt; a second session on the same store skips the fallback
// models whose circuits the first one opened (cooling down for the
// provider's ten-minute reset) and stops with circuit_open after one
// attempt instead of three.
func TestE2EFallbackSummaryAndCooldownSkip(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	flags := []string{"--policy", skipPolicyFile(t), "--fallback-models", "model-b,model-c", "--state-dir", state}
	agent := []string{"--scenario", "fail-then-succeed", "--fail", "100", "--error", "quota", "--reset-in", "10m", "--agent-name", "codex-acp"}

	first := runRecovery(t, flags, agent...)
	pe := summaryOf(t, first.answer())
	if first.prompts != 3 || len(pe.Attempts) != 3 {
		t.Fatalf("first session: agent saw %d prompts, summary lists %d attempts (%s); want 3 and 3", first.prompts, len(pe.Attempts), first.answer().Raw)
	}
	var soonest string
	for i, a := range pe.Attempts {
		if want := []string{"model-a", "model-b", "model-c"}[i]; a.Model != want || a.Code == "" || a.Class == "" || a.DurationMs == nil || a.CooldownUntil == nil {
			t.Errorf("attempt %d: %+v, want model %s with code, class, durationMs, cooldownUntil", i, a, want)
			continue
		}
		if soonest == "" || *a.CooldownUntil < soonest {
			soonest = *a.CooldownUntil
		}
	}
	if pe.SoonestRetryAt == nil || *pe.SoonestRetryAt != soonest {
		t.Errorf("soonestRetryAt %v, want %s", pe.SoonestRetryAt, soonest)
	}
	logged := map[string]bool{}
	for _, rec := range attemptRecords(t, state) {
		logged[rec.Model] = true
	}
	if !logged["model-a"] || !logged["model-b"] || !logged["model-c"] {
		t.Errorf("attempt log names the models %v, want model-a, model-b and model-c", logged)
	}

	second := runRecovery(t, flags, agent...)
	pe = summaryOf(t, second.answer())
	if second.prompts != 1 {
		t.Errorf("second session: agent saw %d prompts, want 1 (model-b and model-c cooling down)", second.prompts)
	}
	if pe.Recovery.Reason != "circuit_open" || pe.Circuit == nil || pe.Circuit.Key != "default/codex-acp/model-b/account" ||
		pe.Circuit.State != "open" || pe.Circuit.CooldownUntil == nil {
		t.Errorf("second session: %s, want recovery.reason circuit_open and model-b's open circuit", second.answer().Raw)
	}
	if len(pe.Attempts) != 1 || pe.Attempts[0].Model != "model-a" {
		t.Errorf("second session: attempts %+v, want model-a only", pe.Attempts)
	}
}

// TestMeasureCircuitOutage measures (README, "Shared circuits") how many
// attempts reach the provider during an outage of five seconds with four
// acp-guard processes, policy "retry 4× from 1 s", circuits on (file
// store) and off. Run with ACP_GUARD_MEASURE_CIRCUITS=1; it asserts
// nothing but that every session is answered.
func TestMeasureCircuitOutage(t *testing.T) {
	if os.Getenv("ACP_GUARD_MEASURE_CIRCUITS") == "" {
		t.Skip("measurement: set ACP_GUARD_MEASURE_CIRCUITS=1")
	}
	const n, outage = 4, 5 * time.Second
	for _, mode := range []string{"file", "off"} {
		t.Run(mode, func(t *testing.T) {
			flags := []string{"--policy", acptest.RetryPolicy(t, 4, 1), "--state-dir", filepath.Join(t.TempDir(), "state"), "--circuits", mode}
			var since time.Time
			r := runOutage(t, n, flags, func(as []*agentAttempt) bool {
				if initial, _ := outageCounts(as); initial == n && since.IsZero() {
					since = time.Now()
				}
				return !since.IsZero() && time.Since(since) >= outage
			})
			checkAllSucceeded(t, r)
			initial, retries := outageCounts(r.attempts)
			var release []string
			for _, a := range r.attempts {
				if a.fin && !a.failed {
					release = append(release, time.Duration(a.end-r.ended.UnixNano()).Round(100*time.Millisecond).String())
				}
			}
			t.Logf("circuits %s: %d processes, outage %v: %d attempts reached the agents during the outage (%d own prompts, %d retries), %d in all; successes after the outage ended: %v",
				mode, n, outage, initial+retries, initial, retries, len(r.attempts), release)
		})
	}
}

// An unreachable NATS server never blocks a turn: the session recovers
// as without circuits, and the store's outage is logged once.
func TestE2ECircuitsNATSUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + l.Addr().String()
	l.Close() // nobody listens there any more
	p := startProxy(t, []string{"--policy", acptest.RetryPolicy(t, 3, 1), "--circuits", url, "--state-dir", filepath.Join(t.TempDir(), "state")},
		"--scenario", "fail-then-succeed", "--fail", "2", "--agent-name", "codex-acp")
	_, sid := p.Open()
	p.Send(acptest.Prompt(3, sid))
	frames := p.Until("3")
	if f := frames[len(frames)-1]; stopReason(t, f) != "end_turn" {
		t.Fatalf("answered %s, want end_turn", f.Raw)
	}
	p.Finish()
	if n := strings.Count(p.Stderr.String(), "circuit store unavailable"); n != 1 {
		t.Errorf("store outage logged %d times, want once; stderr:\n%s", n, p.Stderr.String())
	}
}
