package transport_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/platform"
)

// checkAnsweredOnce checks that every id got exactly one response, and
// returns the responses by id.
func checkAnsweredOnce(t *testing.T, msgs []acptest.Frame, ids ...string) map[string]acptest.Frame {
	t.Helper()
	by := acptest.ResponsesByID(msgs)
	out := map[string]acptest.Frame{}
	for _, id := range ids {
		if n := len(by[id]); n != 1 {
			t.Errorf("id %s: got %d responses, want exactly 1", id, n)
			continue
		}
		out[id] = by[id][0]
	}
	for id := range by {
		if _, ok := out[id]; !ok && !contains(ids, id) {
			t.Errorf("response to id %s, which was never asked", id)
		}
	}
	return out
}

func raws(msgs []acptest.Frame) string {
	var b strings.Builder
	for _, m := range msgs {
		b.Write(acptest.Trunc(m.Raw, 300))
	}
	return b.String()
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestE2EAgentCrashAnswersPendingOnce: when the agent dies with requests in
// flight, each gets exactly one answer, and acp-guard exits as the agent did.
func TestE2EAgentCrashAnswersPendingOnce(t *testing.T) {
	for _, tt := range []struct {
		name       string
		agent      func(t *testing.T) []string
		demo       bool // open a session and send prompts; else plain requests
		wantCode   int
		wantSignal string
		wantStderr string
	}{
		{name: "crash", demo: true, agent: func(t *testing.T) []string { return demoAgent(t, "crash", "--exit-code", "7") },
			wantCode: 7, wantStderr: "fatal: simulated crash"},
		{name: "crash-signal", demo: true, agent: func(t *testing.T) []string { return demoAgent(t, "crash-signal") },
			wantCode: 137, wantSignal: "SIGKILL", wantStderr: "fatal: simulated crash"},
		{name: "sh exits after three requests", agent: func(*testing.T) []string {
			return []string{"sh", "-c", `read -r a; read -r b; read -r c; echo "bye after three" >&2; exit 5`}
		}, wantCode: 5, wantStderr: "bye after three"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := startGuard(t, nil, tt.agent(t)...)
			var ids []string
			var batch string
			if tt.demo {
				sid := openSession(g)
				batch = acptest.Prompt(3, sid) + acptest.Prompt(`p-4`, sid) + acptest.Request(5, "x/unknown", "") + acptest.Prompt(6, sid)
				ids = append(ids, "3", `"p-4"`, "5", "6")
			} else {
				batch = acptest.Initialize(1) + acptest.SessionNew(2) + acptest.Prompt(3, "s") + acptest.Request("four", "x/a", "") + acptest.Request(5.5, "x/b", "")
				ids = []string{"1", "2", "3", `"four"`, "5.5"}
			}
			g.Send(batch) // one write: acp-guard has it all before the agent can die
			msgs := g.Rest()
			code := g.Wait()
			got := checkAnsweredOnce(t, msgs, ids...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			nGuard := 0
			for _, id := range ids {
				m, ok := got[id]
				if !ok || m.Error == nil || !strings.HasPrefix(m.Error.Message, "acp-guard:") {
					continue
				}
				nGuard++
				if m.Error.Code != -32603 {
					t.Errorf("id %s: code %d, want -32603", id, m.Error.Code)
				}
				d := exitOf(t, m.Error).AgentExit
				if d.Code != tt.wantCode || d.Signal != tt.wantSignal {
					t.Errorf("id %s: agentExit code %d signal %q, want %d %q", id, d.Code, d.Signal, tt.wantCode, tt.wantSignal)
				}
				if !strings.Contains(strings.Join(d.Stderr, "\n"), tt.wantStderr) {
					t.Errorf("id %s: agentExit.stderr %q lacks %q", id, d.Stderr, tt.wantStderr)
				}
			}
			if nGuard == 0 {
				t.Errorf("no request was answered by acp-guard for the exit: %s", raws(msgs))
			}
		})
	}
}

// TestE2EExitCodePassThrough: acp-guard exits with the agent's code, and
// 128+N when a signal killed it.
func TestE2EExitCodePassThrough(t *testing.T) {
	for _, tt := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 7", 7},
		{"exit 255", 255},
		{"kill -KILL $$", 137},
		{"kill -TERM $$", 143},
		{"kill -SEGV $$", 139},
	} {
		t.Run(tt.script, func(t *testing.T) {
			g := startGuard(t, nil, "sh", "-c", tt.script)
			if code := g.Wait(); code != tt.want {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.want, g.AllStderr())
			}
		})
	}
}

// trapAgent traps TERM, INT and HUP, says which one it got on stderr and
// exits with 9, 10 or 11.
var trapAgent = []string{"sh", "-c", `
p=
for s in TERM:9 INT:10 HUP:11; do
  trap "kill \$p 2>/dev/null; echo got ${s%:*} >&2; exit ${s#*:}" ${s%:*}
done
echo ready >&2
while :; do sleep 100 & p=$!; wait $p; done`}

// TestE2ESignalsForwarded: SIGTERM, SIGINT and SIGHUP sent to acp-guard
// reach the agent, and acp-guard exits with the agent's code.
func TestE2ESignalsForwarded(t *testing.T) {
	for _, tt := range []struct {
		sig  platform.Signal
		name string
		want int
	}{
		{platform.SIGTERM, "TERM", 9},
		{platform.SIGINT, "INT", 10},
		{platform.SIGHUP, "HUP", 11},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := startGuard(t, nil, trapAgent...)
			g.WaitStderr("ready\n")
			if err := platform.Kill(g.Pid(), tt.sig); err != nil {
				t.Fatal(err)
			}
			if code := g.Wait(); code != tt.want {
				t.Errorf("exit code %d, want %d", code, tt.want)
			}
			log := g.AllStderr()
			if !strings.Contains(log, "got "+tt.name+"\n") {
				t.Errorf("the agent did not report %s:\n%s", tt.name, log)
			}
			if !strings.Contains(log, "forwarding signal to agent") {
				t.Errorf("no log of the forwarded signal:\n%s", log)
			}
		})
	}
	t.Run("demo agent dies of TERM with a prompt pending", func(t *testing.T) {
		g := startGuard(t, nil, demoAgent(t, "hang")...)
		sid := openSession(g)
		g.Send(acptest.Prompt(3, sid))
		g.WaitStderr(`msg="agent started"`)
		if err := platform.Kill(g.Pid(), platform.SIGTERM); err != nil {
			t.Fatal(err)
		}
		msgs := g.Rest()
		if code := g.Wait(); code != 143 {
			t.Errorf("exit code %d, want 143", code)
		}
		m := checkAnsweredOnce(t, msgs, "3")["3"]
		if m.Error == nil {
			t.Fatalf("prompt answered %s, want an error", m.Raw)
		}
		if d := exitOf(t, m.Error).AgentExit; d.Signal != "SIGTERM" || d.Code != 143 {
			t.Errorf("agentExit %+v, want SIGTERM 143", d)
		}
	})
}

// TestE2EStdinEOFShutdown: closing the client's stdin closes the agent's;
// an agent that stays is sent TERM after --grace, and KILL after another —
// or, when the agent is idle (a session is up and nothing is in flight),
// TERM at once: codex-acp and claude-agent-acp do not exit on stdin EOF,
// and a clean close must not cost a grace period. The client ended the
// session, so acp-guard exits 0 and says why (README: exit codes).
func TestE2EStdinEOFShutdown(t *testing.T) {
	for _, tt := range []struct {
		name      string
		agent     func(t *testing.T) []string
		grace     string // long where the agent must go by itself, so a loaded machine cannot make it late
		ready     string // stderr that says the agent set up its signal handling
		session   bool   // open a session first: the agent is idle at the client's EOF
		wantCode  int
		wantLog   []string
		forbidLog []string
	}{
		{name: "cat exits at EOF", agent: func(*testing.T) []string { return []string{"cat"} }, grace: "60s",
			wantCode: 0, wantLog: []string{"client input closed"}, forbidLog: []string{"SIGTERM"}},
		{name: "demo agent exits at EOF", agent: func(t *testing.T) []string { return demoAgent(t, "success") }, grace: "60s",
			wantCode: 0, forbidLog: []string{"SIGTERM"}},
		{name: "hang: TERM after grace", agent: func(t *testing.T) []string { return demoAgent(t, "hang") }, grace: "2s",
			wantCode: 0, wantLog: []string{"sending SIGTERM", "exiting 0"}, forbidLog: []string{"SIGKILL"}},
		{name: "ignore-term: KILL after TERM", agent: func(t *testing.T) []string { return demoAgent(t, "ignore-term") }, grace: "300ms",
			ready: "ignoring SIGTERM", wantCode: 0, wantLog: []string{"sending SIGTERM", "agent ignored SIGTERM; sending SIGKILL", "exiting 0"}},
		// Idle: a grace of an hour, so the test ends only if TERM came at once.
		{name: "hang, idle session: TERM at once", agent: func(t *testing.T) []string { return demoAgent(t, "hang") }, grace: "1h", session: true,
			wantCode: 0, wantLog: []string{"idle=true", "sending SIGTERM now", "exiting 0"}, forbidLog: []string{"level=WARN"}},
		{name: "ignore-term, idle session: KILL a grace after TERM", agent: func(t *testing.T) []string { return demoAgent(t, "ignore-term") }, grace: "300ms",
			ready: "ignoring SIGTERM", session: true, wantCode: 0, wantLog: []string{"sending SIGTERM now", "agent ignored SIGTERM; sending SIGKILL", "exiting 0"}},
		{name: "sh ignoring TERM", agent: func(*testing.T) []string {
			return []string{"sh", "-c", `trap "" TERM; echo ready >&2; while :; do sleep 1; done`}
		}, grace: "300ms", ready: "ready\n", wantCode: 0, wantLog: []string{"agent ignored SIGTERM; sending SIGKILL", "exiting 0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := startGuard(t, []string{"--grace", tt.grace}, tt.agent(t)...)
			g.AgentPID()
			if tt.ready != "" {
				g.WaitStderr(tt.ready)
			}
			if tt.session {
				g.Open()
			}
			g.CloseStdin()
			if rest := g.RestBytes(); len(rest) != 0 {
				t.Errorf("unexpected output %q", acptest.Trunc(rest, 300))
			}
			if code := g.Wait(); code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			log := g.AllStderr()
			for _, s := range tt.wantLog {
				if !strings.Contains(log, s) {
					t.Errorf("log lacks %q:\n%s", s, log)
				}
			}
			for _, s := range tt.forbidLog {
				if strings.Contains(log, s) {
					t.Errorf("log has %q:\n%s", s, log)
				}
			}
		})
	}
	t.Run("pending prompt answered once on the KILL", func(t *testing.T) {
		g := startGuard(t, []string{"--grace", "2s"}, demoAgent(t, "hang", "--ignore-cancel")...)
		sid := openSession(g)
		g.Send(acptest.Prompt(3, sid))
		g.CloseStdin()
		msgs := g.Rest()
		code := g.Wait()
		if code != 0 {
			t.Errorf("exit code %d, want 0 (the client ended the session)", code)
		}
		if m := checkAnsweredOnce(t, msgs, "3")["3"]; m.Error == nil || m.Error.Code != -32603 {
			t.Errorf("prompt answered %s, want -32603", m.Raw)
		}
	})
}

var grandchildRe = regexp.MustCompile(`started grandchild pid (\d+)`)

// TestE2EGrandchildHoldsPipes: a grandchild holding the agent's stdout and
// stderr open does not keep acp-guard alive after the agent exits, and it
// is gone afterwards.
func TestE2EGrandchildHoldsPipes(t *testing.T) {
	g := startGuard(t, nil, demoAgent(t, "grandchild")...)
	sid := openSession(g)
	g.Send(acptest.Prompt(3, sid))
	if m := g.Until("3"); m[len(m)-1].Error != nil {
		t.Fatalf("prompt failed: %s", m[len(m)-1].Raw)
	}
	m := grandchildRe.FindStringSubmatch(g.WaitStderr("started grandchild pid "))
	gpid, _ := strconv.Atoi(m[1])
	agentPID := g.AgentPID()
	if state, _, pgrp, ok := acptest.ProcStat(gpid); !ok || state == "Z" || pgrp != agentPID {
		t.Fatalf("grandchild %d: state %q group %d, want it running in the agent's group %d", gpid, state, pgrp, agentPID)
	}
	g.CloseStdin()
	if rest := g.RestBytes(); len(rest) != 0 {
		t.Errorf("unexpected output %q", acptest.Trunc(rest, 300))
	}
	if code := g.Wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if err := acptest.WaitProcessGone(gpid); err != nil {
		t.Errorf("grandchild: %v", err)
		_ = platform.Kill(gpid, platform.SIGKILL)
	}
}

// TestE2ENoLeakedProcesses: whatever the agent left running in its
// process group is gone when acp-guard has exited (the harness checks the
// group after every test; these agents make it hard).
func TestE2ENoLeakedProcesses(t *testing.T) {
	for _, tt := range []struct {
		name   string
		script string
	}{
		{"background child with pipes closed", `sleep 300 </dev/null >/dev/null 2>&1 & echo "bg $!" >&2; exec cat`},
		{"background child holding stdout", `sleep 300 & echo "bg $!" >&2; exec cat`},
		{"agent killed, child remains", `sleep 300 </dev/null >/dev/null 2>&1 & echo "bg $!" >&2; read -r x; kill -KILL $$`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := startGuard(t, nil, "sh", "-c", tt.script)
			log := g.WaitStderr("bg ")
			m := regexp.MustCompile(`bg (\d+)`).FindStringSubmatch(log)
			bg, _ := strconv.Atoi(m[1])
			g.Send("{}\n")
			g.CloseStdin()
			g.RestBytes()
			g.Wait()
			if err := acptest.WaitProcessGone(bg); err != nil {
				t.Errorf("background child: %v", err)
				_ = platform.Kill(bg, platform.SIGKILL)
			}
		})
	}
}

// TestE2EAgentNotStarted: a missing or non-executable agent gives a clear
// message, exit code 127 or 126, and an error answer to a waiting request.
func TestE2EAgentNotStarted(t *testing.T) {
	dir := t.TempDir()
	noExec := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(noExec, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		argv0    string
		wantCode int
		wantMsg  string
	}{
		{"missing path", filepath.Join(dir, "no-such-agent"), 127, "not found"},
		{"missing on PATH", "acp-guard-no-such-agent-xyz", 127, "not found"},
		{"not executable", noExec, 126, "cannot execute"},
		{"a directory", dir, 126, "cannot execute"},
	} {
		for _, withInit := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/initialize=%v", tt.name, withInit), func(t *testing.T) {
				var pre []byte
				if withInit {
					pre = []byte(acptest.Initialize(1))
				}
				g := startGuardWith(t, pre, nil, tt.argv0, "--flag")
				msgs := g.Rest()
				if code := g.Wait(); code != tt.wantCode {
					t.Errorf("exit code %d, want %d", code, tt.wantCode)
				}
				log := g.AllStderr()
				if !strings.Contains(log, tt.argv0) || !strings.Contains(log, tt.wantMsg) {
					t.Errorf("stderr does not name %q and say %q:\n%s", tt.argv0, tt.wantMsg, log)
				}
				if !withInit {
					if len(msgs) != 0 {
						t.Errorf("unexpected output %s", raws(msgs))
					}
					return
				}
				m := checkAnsweredOnce(t, msgs, "1")["1"]
				if m.Error == nil || m.Error.Code != -32603 || !strings.Contains(m.Error.Message, "could not be started") {
					t.Fatalf("initialize answered %s, want -32603 'could not be started'", m.Raw)
				}
				if d := exitOf(t, m.Error).AgentExit; d.Code != tt.wantCode || !strings.Contains(d.StartError, tt.wantMsg) {
					t.Errorf("agentExit %+v, want code %d and a startError saying %q", d, tt.wantCode, tt.wantMsg)
				}
			})
		}
	}
}

// TestE2EStderrPTY: with --stderr-pty the agent's stderr is a terminal;
// escapes are stripped from the stderr lines kept as evidence.
func TestE2EStderrPTY(t *testing.T) {
	const script = `if [ -t 2 ]; then echo "stderr: terminal" >&2; else echo "stderr: pipe" >&2; fi
printf '\033[1;31mred alert\033[0m \033]0;title\007done\n' >&2
read -r req; exit 3`
	for _, tt := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--stderr-pty"}, "stderr: terminal"},
		{nil, "stderr: pipe"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			g := startGuard(t, tt.flags, "sh", "-c", script)
			g.WaitStderr("done")
			g.Send(acptest.Request(1, "x/ask", ""))
			msgs := g.Rest()
			if code := g.Wait(); code != 3 {
				t.Errorf("exit code %d, want 3", code)
			}
			m := checkAnsweredOnce(t, msgs, "1")["1"]
			if m.Error == nil {
				t.Fatalf("got %s, want an error", m.Raw)
			}
			lines := exitOf(t, m.Error).AgentExit.Stderr
			if got, want := fmt.Sprintf("%q", lines), fmt.Sprintf("%q", []string{tt.want, "red alert done"}); got != want {
				t.Errorf("agentExit.stderr %s, want %s", got, want)
			}
		})
	}
}

// TestE2EStderrFlood: 100,000 stderr lines do not block the agent; the
// prompt is answered and every line is copied to acp-guard's stderr.
func TestE2EStderrFlood(t *testing.T) {
	const n = 100000
	g := startGuard(t, nil, demoAgent(t, "stderr-flood", "--count", strconv.Itoa(n))...)
	sid := openSession(g)
	g.Send(acptest.Prompt(3, sid))
	msgs := g.Until("3")
	var res struct{ StopReason string }
	if last := msgs[len(msgs)-1]; last.Error != nil || json.Unmarshal(last.Result, &res) != nil || res.StopReason != "end_turn" {
		t.Fatalf("prompt answered %s, want end_turn", last.Raw)
	}
	g.CloseStdin()
	if code := g.Wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	log := g.AllStderr()
	if got := strings.Count(log, "demo-agent: flood line "); got != n {
		t.Errorf("%d flood lines copied to stderr, want %d", got, n)
	}
	if !strings.Contains(log, fmt.Sprintf("flood line %d of %d", n, n)) {
		t.Errorf("the last flood line is missing")
	}
}

// TestE2EGuardKilledTakesAgentAlong: when acp-guard itself is killed with
// SIGKILL (nothing of it runs), the kernel terminates the agent (Linux
// parent-death signal) instead of leaving it orphaned.
func TestE2EGuardKilledTakesAgentAlong(t *testing.T) {
	g := startGuard(t, nil, demoAgent(t, "hang")...)
	pid := g.AgentPID()
	if err := platform.Kill(g.Pid(), platform.SIGKILL); err != nil {
		t.Fatal(err)
	}
	g.Wait()
	if err := acptest.WaitProcessGone(pid); err != nil {
		t.Errorf("agent %d outlived a killed acp-guard: %v", pid, err)
	}
}
