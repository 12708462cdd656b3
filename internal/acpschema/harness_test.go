package acpschema_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/acpschema"
	"github.com/acp-guard/acp-guard/internal/testbin"
	"github.com/acp-guard/acp-guard/replay"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// watchdog bounds one process's life: a hang guard, not an assertion.
const watchdog = 90 * time.Second

var (
	loadOnce  sync.Once
	validator *acpschema.Validator
	loadErr   error
	missing   bool
)

// schemaOrSkip loads the schema once; a missing schema skips loudly, or
// fails when CI=true.
func schemaOrSkip(t *testing.T) *acpschema.Validator {
	t.Helper()
	loadOnce.Do(load)
	switch {
	case missing && os.Getenv("CI") == "true":
		t.Fatalf("ACP SCHEMA CONFORMANCE CANNOT RUN (CI=true): %v", loadErr)
	case missing:
		t.Skipf("!!! ACP SCHEMA CONFORMANCE NOT CHECKED: %v", loadErr)
	case loadErr != nil:
		t.Fatalf("loading the ACP schema: %v", loadErr)
	}
	return validator
}

func load() {
	path, err := acpschema.Locate()
	if err != nil {
		missing, loadErr = true, err
		return
	}
	v, err := acpschema.Load(path)
	if err != nil {
		loadErr = err
		return
	}
	// session/set_model was unstable and is gone from newer schemas: check
	// it against the unstable schema the Go SDK in go.mod ships.
	if dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/coder/acp-go-sdk").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(dir)), "schema", "schema.unstable.json")
		if err := v.WithFallback(p); err != nil {
			loadErr = fmt.Errorf("fallback schema: %w", err)
			return
		}
	}
	validator = v
}

// session is one acp-guard process driven by the test as the client.
type session struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *testbin.Stream
	rec    string
	lines  [][]byte          // every stdout line the client read
	sent   map[string]string // request id → method, of the client's requests
}

func start(t *testing.T, argv ...string) *session {
	t.Helper()
	s := &session{t: t, stderr: testbin.NewStream(), sent: map[string]string{}}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.out = bufio.NewReaderSize(out, 1<<20)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Fill ends at stderr EOF; finish waits for it before cmd.Wait.
	go s.stderr.Fill(errR)
	dog := time.AfterFunc(watchdog, func() { _ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) })
	t.Cleanup(func() {
		dog.Stop()
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	})
	return s
}

// proxy starts `acp-guard --record REC FLAGS -- demo-agent ARGS`.
func proxy(t *testing.T, flags []string, agent ...string) *session {
	t.Helper()
	bin := testbin.Path(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	argv := append([]string{bin, "--record", rec, "--state-dir", t.TempDir()}, flags...)
	argv = append(argv, "--")
	if len(agent) == 0 || agent[0] != "!" {
		argv = append(argv, bin, "demo-agent")
	} else {
		agent = agent[1:] // a literal agent command
	}
	s := start(t, append(argv, agent...)...)
	s.rec = rec
	return s
}

func (s *session) send(id int, method, params string) {
	s.t.Helper()
	line := fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s}`, method, params)
	if id >= 0 {
		line = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
		s.sent[fmt.Sprint(id)] = method
	}
	s.raw(line + "\n")
}

func (s *session) raw(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line); err != nil {
		s.t.Fatalf("writing to acp-guard: %v", err)
	}
}

// next reads one stdout line; ok is false at EOF.
func (s *session) next() ([]byte, bool) {
	s.t.Helper()
	b, err := s.out.ReadBytes('\n')
	if len(b) > 0 {
		s.lines = append(s.lines, b)
	}
	if err != nil {
		if !errors.Is(err, io.EOF) {
			s.t.Fatalf("reading stdout: %v", err)
		}
		return b, len(b) > 0
	}
	return b, true
}

// until reads until the response to id (or what match accepts) arrives.
func (s *session) until(match func(f frame) bool) frame {
	s.t.Helper()
	for {
		b, ok := s.next()
		if !ok {
			s.t.Fatalf("stdout ended before the awaited frame; stderr:\n%s", s.stderr.Tail(4000))
		}
		var f frame
		if json.Unmarshal(b, &f) == nil && match(f) {
			return f
		}
	}
}

func answerTo(id string) func(frame) bool {
	return func(f frame) bool { return f.Method == "" && string(f.ID) == id }
}

// open sends initialize and session/new and returns the session id.
func (s *session) open() string {
	s.t.Helper()
	s.send(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}}`)
	s.until(answerTo("1"))
	s.send(2, "session/new", `{"cwd":"/tmp","mcpServers":[]}`)
	f := s.until(answerTo("2"))
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(f.Result, &r) != nil || r.SessionID == "" {
		s.t.Fatalf("session/new answered %s", f.raw)
	}
	return r.SessionID
}

func (s *session) prompt(id int, sid string) {
	s.send(id, "session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"hi"}]}`, sid))
}

// finish closes stdin and reads stdout to its end.
func (s *session) finish() {
	s.t.Helper()
	_ = s.in.Close()
	for {
		if _, ok := s.next(); !ok {
			break
		}
	}
	s.stderr.WaitEOF()
	_ = s.cmd.Wait()
}

type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	raw    []byte
}

func (f *frame) UnmarshalJSON(b []byte) error {
	type plain frame
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*f = frame(p)
	f.raw = append([]byte(nil), b...)
	return nil
}

// readRecording returns the transcript's events (none if there is no file).
func readRecording(t *testing.T, path string) []replay.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	defer f.Close()
	evs, errs := replay.ReadAll(f)
	if len(errs) > 0 {
		t.Fatalf("transcript: %v", errs)
	}
	return evs
}

func trimEOL(b []byte) []byte { return []byte(strings.TrimRight(string(b), "\r\n")) }
