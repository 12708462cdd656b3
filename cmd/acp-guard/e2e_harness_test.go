package main

// A small harness for tests that run the built binary (internal/testbin)
// over real pipes, as an editor or a CI job does.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/cmd/acp-guard/internal/stopsig"
	"github.com/acp-guard/acp-guard/internal/testbin"
)

// TestMain gives the test process its stop signals back (the command's
// package catches them from initialization on; see internal/stopsig).
func TestMain(m *testing.M) {
	stopsig.Release()
	testbin.Main(m)
}

// binWatchdog kills a process that hangs; a guard, not an assertion.
const binWatchdog = 60 * time.Second

type binProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *testbin.Stream
	dog    *time.Timer
	code   int
	waited bool
}

// binFrame is a decoded JSON-RPC frame from the binary's stdout.
type binFrame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw string
}

// startBin runs the binary with args; env entries are added to a clean
// environment holding only PATH, HOME and the XDG directories given (so the
// developer's own ACP_GUARD_* settings never leak into a test).
func startBin(t *testing.T, env []string, args ...string) *binProc {
	t.Helper()
	cmd := exec.Command(testbin.Path(t), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"XDG_CONFIG_HOME=" + filepath.Join(t.TempDir(), "config"), "XDG_STATE_HOME=" + filepath.Join(t.TempDir(), "state")}, env...)
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
	p := &binProc{t: t, cmd: cmd, in: in, out: bufio.NewReader(out), stderr: testbin.NewStream()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.stderr.Fill(errR) // ends at the process's stderr EOF
	p.dog = time.AfterFunc(binWatchdog, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	t.Cleanup(func() {
		if !p.waited {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			p.finish()
		}
		p.dog.Stop()
	})
	return p
}

// send writes frames to stdin (a write to a process that already exited
// is not an error here: what it answered is what the test checks).
func (p *binProc) send(frames ...string) {
	for _, f := range frames {
		_, _ = io.WriteString(p.in, f)
	}
}

// next returns the next stdout frame; ok is false at EOF.
func (p *binProc) next() (binFrame, bool) {
	p.t.Helper()
	b, err := p.out.ReadBytes('\n')
	if err != nil {
		if len(b) > 0 {
			p.t.Fatalf("stdout ended inside a frame: %q", b)
		}
		return binFrame{}, false
	}
	var f binFrame
	if err := json.Unmarshal(b, &f); err != nil {
		p.t.Fatalf("stdout line is not JSON: %v: %q", err, b)
	}
	f.raw = string(b)
	return f, true
}

// until returns the frames up to and including the response to id.
func (p *binProc) until(id string) []binFrame {
	p.t.Helper()
	var got []binFrame
	for {
		f, ok := p.next()
		if !ok {
			p.t.Fatalf("stdout ended before the response to %s; stderr:\n%s", id, p.stderr.Tail(4000))
		}
		got = append(got, f)
		if f.Method == "" && string(f.ID) == id {
			return got
		}
	}
}

// finish closes stdin, reads stdout to EOF and returns the remaining
// frames and the exit code.
func (p *binProc) finish() ([]binFrame, int) {
	if p.waited {
		return nil, p.code
	}
	_ = p.in.Close()
	var rest []binFrame
	for {
		f, ok := p.next()
		if !ok {
			break
		}
		rest = append(rest, f)
	}
	p.stderr.WaitEOF()
	_ = p.cmd.Wait()
	p.waited = true
	p.code = p.cmd.ProcessState.ExitCode()
	return rest, p.code
}

// runBin runs the binary to completion with stdin and returns stdout,
// stderr and the exit code.
func runBin(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	p := startBin(t, env, args...)
	p.send(stdin)
	_ = p.in.Close()
	out, _ := io.ReadAll(p.out)
	p.stderr.WaitEOF()
	_ = p.cmd.Wait()
	p.waited = true
	return string(out), p.stderr.String(), p.cmd.ProcessState.ExitCode()
}

func binRequest(id int, method, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
}

var (
	binInit = binRequest(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	binNew  = binRequest(2, "session/new", `{"cwd":"/tmp","mcpServers":[]}`)
)

func binPrompt(id int, session string) string {
	return binRequest(id, "session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"hi"}]}`, session))
}

// demoAgent is the argv of the binary's own demo agent with args.
func demoAgent(t *testing.T, args ...string) []string {
	return append([]string{testbin.Path(t), "demo-agent"}, args...)
}

// proxy is acp-guard's arguments around the demo agent.
func proxy(t *testing.T, flags []string, agentArgs ...string) []string {
	return append(append(flags, "--"), demoAgent(t, agentArgs...)...)
}

// writeTemp writes content to name in a new temporary directory.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// retryPolicy is a policy document retrying transient failures max times,
// the first after 1 s.
func retryPolicy(t *testing.T, max int) string {
	return writeTemp(t, "policy.json", fmt.Sprintf(`{"version":1,
"transient":{"retry":{"enabled":true,"max_retries":%d,"initial_interval_seconds":1},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`, max))
}

// testbinPath is the built binary's path.
func testbinPath(t *testing.T) string { return testbin.Path(t) }
