package guard_test

// The end-to-end harness: the real acp-guard binary (built once per test
// process by internal/testbin) around the demo agent (the same binary's
// demo-agent command), over real pipes, driven by a small line-based ACP
// client. Frames are decoded with encoding/json here, independently of the
// proxy's own scanner.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/testbin"
	"github.com/acp-guard/acp-guard/replay"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// e2eWatchdog bounds one process's life in a test. It guards against hangs
// and is not an assertion: when it fires the process is killed, its stdout
// ends, and the test fails on the data it did not get.
const e2eWatchdog = 60 * time.Second

// e2eProc is one running process (acp-guard, or the demo agent alone) seen
// from the client's side.
type e2eProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser // nil once closed
	out    *bufio.Reader
	stderr *testbin.Stream
	done   chan struct{}
	dog    *time.Timer
}

// demoArgv is the argv of the demo agent with args.
func demoArgv(t *testing.T, args ...string) []string {
	return append([]string{testbin.Path(t), "demo-agent"}, args...)
}

// startProxy runs `acp-guard FLAGS -- demo-agent ARGS…`.
func startProxy(t *testing.T, flags []string, agentArgs ...string) *e2eProc {
	t.Helper()
	return startArgv(t, proxyArgv(t, flags, demoArgv(t, agentArgs...)...)...)
}

// proxyArgv is acp-guard's argv around an agent command.
func proxyArgv(t *testing.T, flags []string, agent ...string) []string {
	argv := []string{testbin.Path(t), "--log-level", "info"}
	if !slices.Contains(flags, "--state-dir") && !slices.Contains(flags, "--circuits") {
		// A state directory per test: parallel tests of the same demo agent
		// would otherwise share the default one's circuits.
		argv = append(argv, "--state-dir", t.TempDir())
	}
	argv = append(argv, flags...)
	argv = append(argv, "--")
	return append(argv, agent...)
}

// startArgv runs argv with pipes on all three standard streams.
func startArgv(t *testing.T, argv ...string) *e2eProc {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &e2eProc{t: t, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), stderr: testbin.NewStream(), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	// The copier ends at stderr EOF. cmd.Wait is called only after both
	// pipes were read to the end (waitExit), as exec requires.
	go p.stderr.Fill(errR)
	p.dog = time.AfterFunc(e2eWatchdog, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	t.Cleanup(func() {
		p.closeIn()
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_, _ = io.Copy(io.Discard, p.out)
			p.waitExit()
		}
		p.dog.Stop()
	})
	return p
}

// send writes frames to stdin.
func (p *e2eProc) send(frames ...string) {
	p.t.Helper()
	for _, f := range frames {
		if _, err := io.WriteString(p.in, f); err != nil {
			p.t.Fatalf("writing to stdin: %v", err)
		}
	}
}

func (p *e2eProc) closeIn() {
	if p.in != nil {
		_ = p.in.Close()
		p.in = nil
	}
}

// next returns the next stdout frame, decoded.
func (p *e2eProc) next() e2eFrame {
	p.t.Helper()
	b, err := p.out.ReadBytes('\n')
	if err != nil {
		p.t.Fatalf("reading stdout: %v (got %q); stderr:\n%s", err, b, p.stderr.String())
	}
	return decodeFrame(p.t, b)
}

// until returns the frames up to and including the response to id.
func (p *e2eProc) until(id string) []e2eFrame {
	p.t.Helper()
	var got []e2eFrame
	for {
		f := p.next()
		got = append(got, f)
		if f.isResponse() && string(f.ID) == id {
			return got
		}
	}
}

// rest reads stdout to EOF.
func (p *e2eProc) rest() []e2eFrame {
	p.t.Helper()
	b, err := io.ReadAll(p.out)
	if err != nil {
		p.t.Fatalf("reading stdout: %v", err)
	}
	var out []e2eFrame
	for _, ln := range bytes.SplitAfter(b, []byte("\n")) {
		if len(ln) > 0 {
			out = append(out, decodeFrame(p.t, ln))
		}
	}
	return out
}

// waitExit waits for the process (after its stdout was read to EOF) and
// returns its exit code.
func (p *e2eProc) waitExit() int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	default:
	}
	p.stderr.WaitEOF()
	_ = p.cmd.Wait()
	close(p.done)
	return p.cmd.ProcessState.ExitCode()
}

// finish closes stdin, reads stdout to EOF and waits for the exit.
func (p *e2eProc) finish() ([]e2eFrame, int) {
	p.t.Helper()
	p.closeIn()
	rest := p.rest()
	return rest, p.waitExit()
}

// e2eFrame is a decoded JSON-RPC frame.
type e2eFrame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw []byte
}

func decodeFrame(t *testing.T, b []byte) e2eFrame {
	t.Helper()
	var f e2eFrame
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("stdout line is not JSON: %v: %q", err, b)
	}
	f.raw = b
	return f
}

func (f e2eFrame) isResponse() bool { return f.Method == "" && f.ID != nil }

// update is a session/update's update object.
type e2eUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	Content       struct {
		Text string `json:"text"`
	} `json:"content"`
	Meta struct {
		AcpGuard struct {
			Retry *e2eRetry `json:"retry"`
		} `json:"acpGuard"`
	} `json:"_meta"`
}

type e2eRetry struct {
	Attempt    int    `json:"attempt"`
	MaxRetries int    `json:"maxRetries"`
	DelayMs    int64  `json:"delayMs"`
	Deadline   string `json:"deadline"`
	Code       string `json:"code"`
	Class      string `json:"class"`
	Action     string `json:"action"`
}

func (f e2eFrame) update(t *testing.T) (e2eUpdate, bool) {
	t.Helper()
	if f.Method != "session/update" {
		return e2eUpdate{}, false
	}
	var p struct {
		Update e2eUpdate `json:"update"`
	}
	if err := json.Unmarshal(f.Params, &p); err != nil {
		t.Fatalf("session/update params %s: %v", f.Params, err)
	}
	return p.Update, true
}

// retryNotices returns the retry notices among frames.
func retryNotices(t *testing.T, frames []e2eFrame) []e2eUpdate {
	t.Helper()
	var out []e2eUpdate
	for _, f := range frames {
		if u, ok := f.update(t); ok && u.Meta.AcpGuard.Retry != nil {
			out = append(out, u)
		}
	}
	return out
}

// responsesTo returns the responses to id among frames.
func responsesTo(frames []e2eFrame, id string) []e2eFrame {
	var out []e2eFrame
	for _, f := range frames {
		if f.isResponse() && string(f.ID) == id {
			out = append(out, f)
		}
	}
	return out
}

// e2ePE is a ProviderError as decoded by the test.
type e2ePE struct {
	Schema       string  `json:"schema"`
	Code         string  `json:"code"`
	Class        string  `json:"class"`
	Confidence   string  `json:"confidence"`
	Rule         string  `json:"rule"`
	Source       string  `json:"source"`
	ProviderID   string  `json:"providerId"`
	SessionID    string  `json:"sessionId"`
	OccurredAt   string  `json:"occurredAt"`
	RetryAfterMs *int64  `json:"retryAfterMs"`
	ResetAt      *string `json:"resetAt"`
	ReplaySafe   bool    `json:"replaySafe"`
	Evidence     struct {
		AssistantOutput bool `json:"assistantOutput"`
		Thoughts        bool `json:"thoughts"`
		ToolActivity    bool `json:"toolActivity"`
		AgentExited     bool `json:"agentExited"`
	} `json:"evidence"`
	Model    string `json:"model"`
	Recovery struct {
		Action     string `json:"action"`
		Attempt    int    `json:"attempt"`
		MaxRetries int    `json:"maxRetries"`
		Reason     string `json:"reason"`
	} `json:"recovery"`
}

// errorData decodes an error response's data: the providerError and the
// remaining members as raw JSON.
func errorData(t *testing.T, f e2eFrame) (e2ePE, map[string]json.RawMessage) {
	t.Helper()
	if f.Error == nil {
		t.Fatalf("not an error response: %s", f.raw)
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(f.Error.Data, &data); err != nil {
		t.Fatalf("error data of %s: %v", f.raw, err)
	}
	raw, ok := data["providerError"]
	if !ok {
		t.Fatalf("no providerError in %s", f.raw)
	}
	var pe e2ePE
	if err := json.Unmarshal(raw, &pe); err != nil {
		t.Fatalf("providerError %s: %v", raw, err)
	}
	delete(data, "providerError")
	return pe, data
}

// stopReason returns a prompt result's stopReason.
func stopReason(t *testing.T, f e2eFrame) string {
	t.Helper()
	if f.Error != nil || f.Result == nil {
		t.Fatalf("not a result: %s", f.raw)
	}
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(f.Result, &r); err != nil {
		t.Fatalf("result %s: %v", f.Result, err)
	}
	return r.StopReason
}

// Client frames.

func e2eRequest(id int, method, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
}

const (
	e2eInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n"
	e2eNew  = `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}` + "\n"
)

func e2ePrompt(id int, session string) string {
	return e2eRequest(id, "session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"hi"}]}`, session))
}

func e2eCancel(session string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`+"\n", session)
}

// open initializes the agent and opens a session; it returns the frames
// the client saw and the session id.
func (p *e2eProc) open() ([]e2eFrame, string) {
	p.t.Helper()
	p.send(e2eInit, e2eNew)
	frames := p.until("1")
	frames = append(frames, p.until("2")...)
	last := frames[len(frames)-1]
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if last.Error != nil || json.Unmarshal(last.Result, &r) != nil || r.SessionID == "" {
		p.t.Fatalf("session/new answered %s", last.raw)
	}
	return frames, r.SessionID
}

// writeFile writes a file under the test's temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// retryPolicyFile writes a policy: transient retries (max, 1 s initial),
// then on_exhausted stop; hard failures stop.
func retryPolicyFile(t *testing.T, max, initial int) string {
	t.Helper()
	return writeFile(t, "policy.json", fmt.Sprintf(`{"version":1,
"transient":{"retry":{"enabled":true,"max_retries":%d,"initial_interval_seconds":%d},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`, max, initial))
}

// transcript reads a --record transcript.
func transcript(t *testing.T, path string) []replay.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, errs := replay.ReadAll(f)
	if len(errs) > 0 {
		t.Fatalf("transcript %s: %v", path, errs)
	}
	return evs
}

// promptsToAgent returns the session/prompt frames the agent received
// (c2a, not suppressed) and how many of them the guard sent.
func promptsToAgent(t *testing.T, evs []replay.Event) (total, viaGuard int) {
	t.Helper()
	for _, e := range evs {
		if e.Dir != replay.DirC2A || e.Suppressed || !e.IsJSON() {
			continue
		}
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(e.Msg, &m) == nil && m.Method == "session/prompt" {
			total++
			if e.Via == replay.ViaGuard {
				viaGuard++
			}
		}
	}
	return total, viaGuard
}
