package acpschema_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acpschema"
	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/testbin"
	"github.com/acp-guard/acp-guard/replay"
)

func TestMain(m *testing.M) { testbin.Main(m) }

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

// session is one acp-guard process driven by the test as the client
// (internal/acptest), keeping every stdout line it read.
type session struct {
	*acptest.Proc
	t    *testing.T
	rec  string
	sent map[string]string // request id → method, of the client's requests
}

// proxy starts `acp-guard --record REC FLAGS -- demo-agent ARGS`, or, when
// agent starts with "!", the literal agent command after it.
func proxy(t *testing.T, flags []string, agent ...string) *session {
	t.Helper()
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	if len(agent) == 0 || agent[0] != "!" {
		agent = acptest.DemoAgent(t, agent...)
	} else {
		agent = agent[1:]
	}
	argv := acptest.GuardArgv(t, append([]string{"--record", rec}, flags...), agent...)
	p := acptest.Start(t, argv, acptest.Options{Record: true, SkipInvalid: true})
	return &session{Proc: p, t: t, rec: rec, sent: map[string]string{}}
}

// send sends a request (id ≥ 0, remembered with its method) or a
// notification (id < 0).
func (s *session) send(id int, method, params string) {
	s.t.Helper()
	if id < 0 {
		s.Send(acptest.Notification(method, params))
		return
	}
	s.sent[fmt.Sprint(id)] = method
	s.Send(acptest.Request(id, method, params))
}

// until reads until a frame match accepts and returns it.
func (s *session) until(match func(f acptest.Frame) bool) acptest.Frame {
	s.t.Helper()
	got := s.UntilMatch(match)
	return got[len(got)-1]
}

func answerTo(id string) func(acptest.Frame) bool {
	return func(f acptest.Frame) bool { return f.Answers(id) }
}

// open sends initialize (with file system and terminal) and session/new
// and returns the session id.
func (s *session) open() string {
	s.t.Helper()
	s.send(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}}`)
	s.until(answerTo("1"))
	s.send(2, "session/new", `{"cwd":"/tmp","mcpServers":[]}`)
	sid, err := acptest.SessionID(s.until(answerTo("2")))
	if err != nil {
		s.t.Fatal(err)
	}
	return sid
}

func (s *session) prompt(id int, sid string) {
	s.send(id, "session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"hi"}]}`, sid))
}

// finish closes stdin and reads stdout to its end.
func (s *session) finish() {
	s.t.Helper()
	s.Finish()
}

// readRecording returns the transcript's events (none if there is no file).
func readRecording(t *testing.T, path string) []replay.Event {
	t.Helper()
	evs, errs := replay.ReadFile(path)
	if len(errs) == 1 && errors.Is(errs[0], fs.ErrNotExist) {
		return nil
	}
	if len(errs) > 0 {
		t.Fatalf("transcript: %v", errs)
	}
	return evs
}

func trimEOL(b []byte) []byte { return []byte(strings.TrimRight(string(b), "\r\n")) }
