package transport_test

// The harness of the end-to-end tests: it runs the real acp-guard binary
// (built once per test process by internal/testbin) with real pipes on all
// three standard streams, and checks after every test that the agent's
// process group is gone.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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

// watchdog bounds how long one acp-guard process may live in a test. It is
// a guard against hangs, not an assertion: when it fires the process is
// killed, its stdout ends, and the test fails on the data it did not get.
const watchdog = 90 * time.Second

// guard is one running acp-guard process seen from the client's side.
type guard struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     *os.File      // client → acp-guard; nil once closed
	out    *bufio.Reader // acp-guard → client
	outF   *os.File
	stderr *testbin.Stream
	done   chan struct{} // closed when the process has been waited for
	status *os.ProcessState
	dog    *time.Timer
	bitten bool // the watchdog fired
	mu     sync.Mutex
}

// startGuard runs `acp-guard FLAGS -- AGENT…` with --log-level info (unless
// flags set a level), so "agent started" names the agent's pid.
func startGuard(t *testing.T, flags []string, agent ...string) *guard {
	t.Helper()
	return startGuardWith(t, nil, flags, agent...)
}

// startGuardWith is startGuard with bytes already waiting on stdin when the
// process starts.
func startGuardWith(t *testing.T, preStdin []byte, flags []string, agent ...string) *guard {
	t.Helper()
	bin := testbin.Path(t)
	args := []string{}
	if !hasFlag(flags, "--log-level") {
		args = append(args, "--log-level", "info")
	}
	args = append(args, flags...)
	args = append(args, "--")
	args = append(args, agent...)

	inR, inW := mustPipe(t)
	outR, outW := mustPipe(t)
	errR, errW := mustPipe(t)
	if len(preStdin) > 0 {
		if _, err := inW.Write(preStdin); err != nil {
			t.Fatalf("writing stdin before start: %v", err)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	// Its own process group: signals the tests send stay with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting acp-guard: %v", err)
	}
	inR.Close()
	outW.Close()
	errW.Close()

	g := &guard{
		t:      t,
		cmd:    cmd,
		in:     inW,
		out:    bufio.NewReaderSize(outR, 1<<20),
		outF:   outR,
		stderr: testbin.NewStream(),
		done:   make(chan struct{}),
	}
	// The stderr copier exits at EOF, which comes when acp-guard and
	// everything it started are gone (or the watchdog killed it).
	go g.stderr.Fill(errR)
	// The waiter exits when acp-guard does; done tells the test.
	go func() {
		_ = cmd.Wait()
		g.mu.Lock()
		g.status = cmd.ProcessState
		g.mu.Unlock()
		close(g.done)
	}()
	g.dog = time.AfterFunc(watchdog, func() {
		g.mu.Lock()
		g.bitten = true
		g.mu.Unlock()
		_ = cmd.Process.Kill()
	})
	t.Cleanup(g.cleanup)
	return g
}

func hasFlag(flags []string, name string) bool {
	for _, f := range flags {
		if f == name || strings.HasPrefix(f, name+"=") {
			return true
		}
	}
	return false
}

func mustPipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	return r, w
}

// cleanup ends the process if the test did not, then checks that the
// agent's process group is gone.
func (g *guard) cleanup() {
	g.closeIn()
	select {
	case <-g.done:
	default:
		_ = g.cmd.Process.Kill()
		<-g.done
	}
	g.dog.Stop()
	g.outF.Close()
	g.mu.Lock()
	bitten := g.bitten
	g.mu.Unlock()
	if bitten {
		g.t.Errorf("acp-guard still running after %v; killed it. stderr:\n%s", watchdog, g.stderr.Tail(4000))
	}
	pgid, ok := g.agentPID()
	if !ok {
		return
	}
	if err := waitGroupGone(pgid); err != nil {
		g.t.Errorf("agent process group %d: %v", pgid, err)
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // do not leak it into other tests
	}
}

var agentStartedRe = regexp.MustCompile(`msg="agent started" pid=(\d+)`)

// agentPID returns the pid (and process group id) acp-guard logged for the
// agent, if it logged one.
func (g *guard) agentPID() (int, bool) {
	m := agentStartedRe.FindStringSubmatch(g.stderr.String())
	if m == nil {
		return 0, false
	}
	pid, err := strconv.Atoi(m[1])
	return pid, err == nil
}

// waitAgentPID waits until acp-guard has logged the agent's pid.
func (g *guard) waitAgentPID() int {
	g.t.Helper()
	g.waitStderr(`msg="agent started"`)
	pid, ok := g.agentPID()
	if !ok {
		g.t.Fatalf("no agent pid in the log:\n%s", g.stderr.Tail(2000))
	}
	return pid
}

func (g *guard) pid() int { return g.cmd.Process.Pid }

// send writes frames to acp-guard's stdin.
func (g *guard) send(frames ...string) {
	g.t.Helper()
	for _, f := range frames {
		if _, err := io.WriteString(g.in, f); err != nil {
			g.t.Fatalf("writing to acp-guard: %v", err)
		}
	}
}

// closeIn closes the client's side of stdin (EOF for acp-guard).
func (g *guard) closeIn() {
	if g.in != nil {
		g.in.Close()
		g.in = nil
	}
}

// line returns the next line from acp-guard's stdout, terminator included.
func (g *guard) line() []byte {
	g.t.Helper()
	b, err := g.out.ReadBytes('\n')
	if err != nil {
		g.t.Fatalf("reading acp-guard stdout: %v (got %q so far); stderr:\n%s", err, trunc(b, 200), g.stderr.Tail(2000))
	}
	return b
}

// msg returns the next line from stdout, decoded.
func (g *guard) msg() rpcMsg {
	g.t.Helper()
	b := g.line()
	var m rpcMsg
	if err := json.Unmarshal(b, &m); err != nil {
		g.t.Fatalf("stdout line is not JSON: %v: %q", err, trunc(b, 200))
	}
	m.raw = b
	return m
}

// until returns stdout messages up to and including the response to id.
func (g *guard) until(id string) []rpcMsg {
	g.t.Helper()
	var got []rpcMsg
	for {
		m := g.msg()
		got = append(got, m)
		if m.isResponse() && string(m.ID) == id {
			return got
		}
	}
}

// rest reads stdout to EOF.
func (g *guard) rest() []byte {
	g.t.Helper()
	b, err := io.ReadAll(g.out)
	if err != nil {
		g.t.Fatalf("reading acp-guard stdout: %v", err)
	}
	return b
}

// restMsgs reads stdout to EOF and decodes every line.
func (g *guard) restMsgs() []rpcMsg {
	g.t.Helper()
	var out []rpcMsg
	for _, ln := range bytes.SplitAfter(g.rest(), []byte("\n")) {
		if len(ln) == 0 {
			continue
		}
		var m rpcMsg
		if err := json.Unmarshal(ln, &m); err != nil {
			g.t.Fatalf("stdout line is not JSON: %v: %q", err, trunc(ln, 200))
		}
		m.raw = ln
		out = append(out, m)
	}
	return out
}

// wait waits for acp-guard to exit and returns its exit code (128+N when a
// signal killed it).
func (g *guard) wait() int {
	g.t.Helper()
	<-g.done
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.bitten {
		g.t.Fatalf("acp-guard hung; the watchdog killed it. stderr:\n%s", g.stderr.Tail(4000))
	}
	if ws, ok := g.status.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return g.status.ExitCode()
}

// waitStderr waits until acp-guard's stderr contains s and returns it all.
func (g *guard) waitStderr(s string) string {
	g.t.Helper()
	if !g.stderr.WaitFor(s) {
		g.t.Fatalf("stderr ended without %q:\n%s", s, g.stderr.Tail(4000))
	}
	return g.stderr.String()
}

// allStderr waits for stderr to end (acp-guard exited) and returns it.
func (g *guard) allStderr() string {
	g.stderr.WaitEOF()
	return g.stderr.String()
}

// rpcMsg is a decoded JSON-RPC frame as the client sees it.
type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
	raw    []byte
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (m rpcMsg) isResponse() bool { return m.Method == "" && m.ID != nil }

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

func (e *rpcError) exit(t *testing.T) exitData {
	t.Helper()
	var d exitData
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("error data %s: %v", e.Data, err)
	}
	return d
}

// responsesByID counts the responses per id.
func responsesByID(msgs []rpcMsg) map[string][]rpcMsg {
	by := map[string][]rpcMsg{}
	for _, m := range msgs {
		if m.isResponse() {
			by[string(m.ID)] = append(by[string(m.ID)], m)
		}
	}
	return by
}

// Client frames.

func request(id any, method string, params string) string {
	idb, _ := json.Marshal(id)
	if params == "" {
		params = "{}"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`+"\n", idb, method, params)
}

func initialize(id any) string {
	return request(id, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
}

func sessionNew(id any) string {
	return request(id, "session/new", `{"cwd":"/tmp","mcpServers":[]}`)
}

func prompt(id any, session string) string {
	return request(id, "session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"hi"}]}`, session))
}

// echoFrame asks the demo agent to write payload to its stdout verbatim.
func echoFrame(payload []byte) string {
	return `{"jsonrpc":"2.0","method":"test/echo","params":{"payload":"` + base64.StdEncoding.EncodeToString(payload) + `"}}` + "\n"
}

// openSession initializes the demo agent and opens a session.
func (g *guard) openSession() string {
	g.t.Helper()
	g.send(initialize(1), sessionNew(2))
	g.until("1")
	msgs := g.until("2")
	var res struct {
		SessionID string `json:"sessionId"`
	}
	last := msgs[len(msgs)-1]
	if last.Error != nil || json.Unmarshal(last.Result, &res) != nil || res.SessionID == "" {
		g.t.Fatalf("session/new answered %s", last.raw)
	}
	return res.SessionID
}

// Process checks.

// waitGroupGone waits until no live process is left in process group pgid.
// A zombie (killed, not yet reaped by an init that does not reap) counts
// as gone. Killing is asynchronous, so this polls; the deadline is only a
// guard.
func waitGroupGone(pgid int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		live := liveInGroup(pgid)
		if len(live) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still has live processes %v", live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// liveInGroup lists the pids of non-zombie processes in group pgid.
func liveInGroup(pgid int) []int {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	var live []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, pg, ok := procStat(pid)
		if ok && pg == pgid && state != "Z" && state != "X" {
			live = append(live, pid)
		}
	}
	return live
}

// processGone waits until pid no longer runs (gone or a zombie).
func waitProcessGone(pid int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if state, _, ok := procStat(pid); !ok || state == "Z" || state == "X" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// procStat reads the state and process group of pid from /proc.
func procStat(pid int) (state string, pgrp int, ok bool) {
	state, _, pgrp, ok = procFields(pid)
	return state, pgrp, ok
}

// procFields reads the state, parent and process group of pid from
// /proc/PID/stat: "pid (comm) state ppid pgrp …", where comm may hold
// spaces and parentheses.
func procFields(pid int) (state string, ppid, pgrp int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return "", 0, 0, false
	}
	pp, err1 := strconv.Atoi(f[1])
	pg, err2 := strconv.Atoi(f[2])
	return f[0], pp, pg, err1 == nil && err2 == nil
}

// vmHWM reads a live process's peak resident set in bytes.
func vmHWM(t *testing.T, pid int) int64 { return vmHWMOf(t, pid) }

func vmHWMOf(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatalf("reading /proc/%d/status: %v", pid, err)
	}
	for _, ln := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(ln, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

func trunc(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
