package acpguard_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/internal/testbin"
	"github.com/acp-guard/acp-guard/replay"
)

//go:generate go test -run TestTerminalGoldens -record .
//go:generate go test ./replay -run TestGolden -update

// The terminal-reason goldens: for every way the live proxy can end a
// client request — each recovery.reason it can answer with, the set-up and
// launch failures, the agent's exit — a transcript recorded live through
// the acp-guard binary around the demo agent (testdata/transcripts/
// terminal), and a test that replays each offline through the one
// pipeline assembly and compares the client-bound frames with what the
// live client received.
//
// Recording is this test's -record flag; nothing is written by hand:
//
//	go test -run TestTerminalGoldens -record .          # re-record them all (or -run TestTerminalGoldens/NAME)
//	go test ./replay -run TestGolden -update             # then their replay --json expectations
//
// (`go generate .` runs both.) Review the diff: each case's table entry
// says what its answer must be. A golden recorded with another catalogue
// than the embedded one fails until it is re-recorded: what the live proxy
// decided then is no measure of the replay now.

var record = flag.Bool("record", false, "re-record testdata/transcripts/terminal through the acp-guard binary and the demo agent")

const terminalDir = "testdata/transcripts/terminal"

// Policies of the cases.
const (
	retryOnce   = `{"version":1,"transient":{"retry":{"enabled":true,"max_retries":1,"initial_interval_seconds":1},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},"hard":{"on_exhausted":"stop"}}`
	retryTwice  = `{"version":1,"transient":{"retry":{"enabled":true,"max_retries":2,"initial_interval_seconds":1},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},"hard":{"on_exhausted":"stop"}}`
	retryLater  = `{"version":1,"transient":{"retry":{"enabled":true,"max_retries":3,"initial_interval_seconds":30},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},"hard":{"on_exhausted":"stop"}}`
	skipAll     = `{"version":1,"transient":{"on_exhausted":"skip"},"hard":{"on_exhausted":"skip"}}`
	compactOnly = `{"version":1,"transient":{"on_exhausted":"stop"},"hard":{"on_exhausted":"stop"},"request":{"compact_then_retry":true}}`
	stallOnly   = `{"version":1,"transient":{"on_exhausted":"stop"},"hard":{"on_exhausted":"stop"},"stall_timeout_seconds":1}`
	emptyError  = `{"version":1,"transient":{"on_exhausted":"stop"},"hard":{"on_exhausted":"stop"},"empty_turn":"error"}`
)

// answer is what a client request must be answered with: a result
// (reason "result"; compacted: with _meta.acpGuard.compacted), or an error
// whose providerError has this recovery.reason (and code, phase when
// given).
type answer struct {
	id, reason, code, phase string
	compacted               bool
}

// terminalCase is one golden: how it is recorded and what it must show.
type terminalCase struct {
	name    string
	policy  string   // policy document ("": none)
	flags   []string // more acp-guard flags
	agent   []string // the agent command after the demo agent ("" first: a command of its own)
	script  script
	answers []answer
	// logTaken: the attempt log's name in the state directory is taken by
	// a directory, so the log cannot be written (a state directory that
	// cannot be written at all stops acp-guard at start instead).
	logTaken bool
}

var terminalCases = []terminalCase{
	{name: "agent_stalled", policy: stallOnly, agent: demo("stall-after-text", "--delay", "4s"), script: onePrompt,
		answers: []answer{{id: "3", reason: "agent_stalled", code: "agent_stalled"}}},
	{name: "fallback_chain_then_circuit_open", policy: skipAll, flags: []string{"--fallback-models", "model-b,model-c"},
		agent: demo("fail-then-succeed", "--fail", "100", "--error", "quota", "--reset-in", "10m", "--agent-name", "codex-acp"), script: twoSessions,
		answers: []answer{{id: "3", reason: "no_fallback", code: "quota_limited"}, {id: "5", reason: "circuit_open", code: "quota_limited"}}},
	{name: "fallback_switch", policy: skipAll, flags: []string{"--fallback-models", "model-b"},
		agent: demo("fail-model", "--bad-model", "model-a", "--error", "overloaded", "--agent-name", "codex-acp"), script: onePrompt,
		answers: []answer{{id: "3", reason: "result"}}},
	{name: "late_activity", policy: retryLater, agent: demo("late-message", "--agent-name", "codex-acp"), script: onePrompt,
		answers: []answer{{id: "3", reason: "late_activity"}}},
	{name: "retries_exhausted", policy: retryTwice, agent: demo("fail-then-succeed", "--fail", "5", "--agent-name", "codex-acp"), script: onePrompt,
		answers: []answer{{id: "3", reason: "exhausted", code: "agent_transport_lost"}}},
	{name: "retried", policy: retryOnce, agent: demo("fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"), script: onePrompt,
		answers: []answer{{id: "3", reason: "result"}}},
	{name: "unsafe", policy: retryOnce, agent: demo("text-then-fail", "--agent-name", "codex-acp"), script: onePrompt,
		answers: []answer{{id: "3", reason: "unsafe"}}},
	{name: "unclassified", policy: retryOnce, agent: demo("unknown-error"), script: onePrompt,
		answers: []answer{{id: "3", reason: "unclassified", code: "unclassified"}}},
	{name: "request_class", policy: retryOnce, agent: demo("context-overflow", "--agent-name", "codex-acp"), script: onePrompt,
		answers: []answer{{id: "3", reason: "request_class", code: "context_overflow"}}},
	{name: "empty_response", policy: emptyError, agent: demo("empty"), script: onePrompt,
		answers: []answer{{id: "3", reason: "exhausted", code: "empty_response"}}},
	{name: "state_unwritable", policy: retryOnce, logTaken: true, agent: demo("fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"), script: onePrompt,
		answers: []answer{{id: "3", reason: "state_unwritable"}}},
	{name: "state_unwritable_compaction", policy: compactOnly, logTaken: true, agent: demo("compact"), script: onePrompt,
		answers: []answer{{id: "3", reason: "state_unwritable", code: "context_overflow"}}},
	{name: "shutting_down", policy: retryLater, agent: demo("fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"), script: signalDuringWait,
		answers: []answer{{id: "3", reason: "shutting_down"}}},
	{name: "cancelled_during_wait", policy: retryLater, agent: demo("fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"), script: cancelDuringWait,
		answers: []answer{{id: "3", reason: "result"}}},
	{name: "stop_now", policy: retryLater, agent: demo("fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"), script: actionDuringWait("stop"),
		answers: []answer{{id: "3", reason: "stop_now"}}},
	{name: "retry_now", policy: retryLater, agent: demo("fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"), script: actionDuringWait("retry_now"),
		answers: []answer{{id: "3", reason: "result"}}},
	{name: "skip_now", policy: retryLater, flags: []string{"--fallback-models", "model-b"},
		agent: demo("fail-model", "--bad-model", "model-a", "--error", "overloaded", "--agent-name", "codex-acp"), script: actionDuringWait("skip"),
		answers: []answer{{id: "3", reason: "result"}}},
	{name: "superseded", policy: retryLater, agent: demo("fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"), script: supersede,
		answers: []answer{{id: "3", reason: "superseded"}, {id: "4", reason: "result"}}},
	{name: "compacted", policy: compactOnly, agent: demo("compact"), script: onePrompt,
		answers: []answer{{id: "3", reason: "result", compacted: true}}},
	{name: "compaction_failed", policy: compactOnly, agent: demo("compact-fail"), script: onePrompt,
		answers: []answer{{id: "3", reason: "compaction_failed", code: "context_overflow"}}},
	{name: "compaction_tool", policy: compactOnly, agent: demo("compact-tool"), script: onePrompt,
		answers: []answer{{id: "3", reason: "compaction_failed", code: "context_overflow"}}},
	{name: "compaction_empty", policy: compactOnly, agent: demo("compact-empty"), script: onePrompt,
		answers: []answer{{id: "3", reason: "compaction_empty", code: "context_overflow"}}},
	{name: "overflow_after_compaction", policy: compactOnly, agent: demo("compact-again"), script: onePrompt,
		answers: []answer{{id: "3", reason: "overflow_after_compaction", code: "context_overflow"}}},
	{name: "no_compaction_command", policy: compactOnly, agent: demo("compact-none"), script: onePrompt,
		answers: []answer{{id: "3", reason: "no_compaction_command", code: "context_overflow"}}},
	{name: "no_policy", agent: demo("fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"), script: onePrompt,
		answers: []answer{{id: "3", reason: "no_policy", code: "agent_transport_lost"}}},
	{name: "agent_exited", agent: demo("crash"), script: onePrompt,
		answers: []answer{{id: "3", reason: "agent_exited"}}},
	{name: "agent_killed", agent: demo("crash-signal"), script: onePrompt,
		answers: []answer{{id: "3", reason: "agent_exited"}}},
	{name: "setup_failed", agent: demo("setup-error", "--agent-name", "codex-acp"), script: setupOnly,
		answers: []answer{{id: "2", reason: "setup_failed", code: "auth_required", phase: "session_setup"}}},
	{name: "launch_failed", agent: demo("exit-at-start"), script: initializeOnly,
		answers: []answer{{id: "1", reason: "agent_exited", code: "missing_credentials", phase: "launch"}}},
	{name: "not_started", agent: []string{"", "/nonexistent/acp-agent"}, script: initializeOnly,
		answers: []answer{{id: "1", reason: "agent_exited", phase: "launch"}}},
}

// requiredReasons are the terminal reasons the goldens must cover between
// them: a case removed or re-recorded into another answer
// fails the test.
var requiredReasons = []string{
	"agent_stalled", "circuit_open", "late_activity", "state_unwritable", "shutting_down", "exhausted",
	"no_fallback", "no_policy", "unsafe", "unclassified", "request_class", "superseded", "agent_exited", "setup_failed",
	"compaction_failed", "compaction_empty", "overflow_after_compaction", "no_compaction_command", "result",
	"stop_now",
}

func demo(scenario string, args ...string) []string {
	return append([]string{"demo-agent", "--scenario", scenario}, args...)
}

// TestTerminalGoldens replays every terminal-reason golden offline through
// acpguard.Replay and checks that the client gets the frames the live
// client got, byte for byte but for the fields normalizeTimes names, and
// that each answer is the one its case is about.
func TestTerminalGoldens(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range terminalCases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(terminalDir, tc.name+".jsonl")
			if *record {
				recordTerminal(t, tc, path)
			}
			events := readTranscript(t, path)
			if meta, _ := replay.MetaOf(events); meta.Catalogue != catalogue.Default().Version() {
				t.Fatalf("%s was recorded with catalogue %s, acp-guard embeds %s: classification may have changed; "+
					"re-record the goldens (go generate ., see terminal_test.go) and review the diff", path, meta.Catalogue, catalogue.Default().Version())
			}
			live := replay.ClientView(events)
			checkAnswers(t, tc, live)
			res, err := acpguard.Replay(events, acpguard.Config{})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range res.Errors {
				t.Errorf("replay: %v", e)
			}
			acptest.EqualFrames(t, "client frames, replayed (got) and live (want)", normalizeTimes(res.Client), normalizeTimes(live))
			for _, a := range tc.answers {
				covered[a.reason] = true
			}
		})
	}
	for _, r := range requiredReasons {
		if !covered[r] {
			t.Errorf("no golden covers %s", r)
		}
	}
}

// timeFields are the client-bound fields that legitimately differ between
// the live run and its replay: each is a reading of the clock, and the live
// clock and the replay's virtual one (which starts at the recording's start
// and steps to each event's t_ms, whole milliseconds, firing timers exactly
// at their deadlines) read it at slightly different instants —
//
//	occurredAt                 when the failure was seen
//	deadline                   when a scheduled retry is due (now + delay)
//	cooldownUntil, soonestRetryAt  when a circuit's cooldown ends (now + cooldown)
//	durationMs                 how long a failed attempt ran
//	stalledMs and the duration in the agent_stalled message
//	                           how long the agent had been silent when the
//	                           watchdog's timer ran (live timers run late)
var (
	timeFields    = regexp.MustCompile(`"(occurredAt|deadline|cooldownUntil|soonestRetryAt)":"[^"]*"`)
	durationField = regexp.MustCompile(`"(durationMs|stalledMs)":[0-9]+`)
	stallMessage  = regexp.MustCompile(`no frame from the agent for [0-9][0-9.hmsµn]* during`)
)

func normalizeTimes(frames [][]byte) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		s := timeFields.ReplaceAllString(string(f), `"$1":"(time)"`)
		s = durationField.ReplaceAllString(s, `"$1":0`)
		out[i] = stallMessage.ReplaceAllString(s, "no frame from the agent for (duration) during")
	}
	return out
}

func readTranscript(t *testing.T, path string) []replay.Event {
	t.Helper()
	events, errs := replay.ReadFile(path)
	if len(errs) > 0 {
		t.Fatalf("%s: %v (record it: go test -run 'TestTerminalGoldens' -record .)", path, errs)
	}
	return events
}

// checkAnswers checks that the live client got exactly one answer to each
// of the case's requests, and the one the case is about.
func checkAnswers(t *testing.T, tc terminalCase, frames [][]byte) {
	t.Helper()
	for _, a := range tc.answers {
		var got []frame
		for _, f := range frames {
			if fr := decode(f); fr.isResponse() && string(fr.ID) == a.id {
				got = append(got, fr)
			}
		}
		if len(got) != 1 {
			t.Errorf("request %s answered %d times, want once", a.id, len(got))
			continue
		}
		reason, code, phase, compacted := got[0].verdict()
		if reason != a.reason || a.code != "" && code != a.code || a.phase != "" && phase != a.phase || compacted != a.compacted {
			t.Errorf("request %s answered %s\nwant reason %s code %q phase %q compacted %v", a.id, got[0].raw, a.reason, a.code, a.phase, a.compacted)
		}
	}
}

// frame is a decoded JSON-RPC frame.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result *struct {
		Meta struct {
			AcpGuard struct {
				Compacted bool `json:"compacted"`
			} `json:"acpGuard"`
		} `json:"_meta"`
	} `json:"result"`
	Error *struct {
		Data struct {
			PE struct {
				Code     string `json:"code"`
				Phase    string `json:"phase"`
				Recovery struct {
					Reason string `json:"reason"`
				} `json:"recovery"`
			} `json:"providerError"`
		} `json:"data"`
	} `json:"error"`
	raw []byte
}

func decode(b []byte) frame {
	var f frame
	_ = json.Unmarshal(b, &f)
	f.raw = b
	return f
}

func (f frame) isResponse() bool { return f.Method == "" && f.ID != nil }

func (f frame) verdict() (reason, code, phase string, compacted bool) {
	if f.Error == nil {
		return "result", "", "", f.Result != nil && f.Result.Meta.AcpGuard.Compacted
	}
	pe := f.Error.Data.PE
	return pe.Recovery.Reason, pe.Code, pe.Phase, false
}

// recordTerminal records tc live: acp-guard (the built binary) with the
// case's policy, a fresh state directory and --record, around the demo
// agent (the same binary), driven by the case's script over real pipes.
func recordTerminal(t *testing.T, tc terminalCase, path string) {
	t.Helper()
	bin := testbin.Path(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if tc.logTaken {
		if err := os.MkdirAll(filepath.Join(state, "attempts.jsonl"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	rec := filepath.Join(dir, "session.jsonl")
	args := []string{"--record", rec, "--state-dir", state}
	if tc.policy != "" {
		pf := filepath.Join(dir, "policy.json")
		if err := os.WriteFile(pf, []byte(tc.policy), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--policy", pf)
	}
	args = append(append(args, tc.flags...), "--")
	if tc.agent[0] == "" {
		args = append(args, tc.agent[1:]...)
	} else {
		args = append(append(args, bin), tc.agent...)
	}
	c := startClient(t, bin, args...)
	tc.script(c)
	c.finish()
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A script drives one recorded session as an ACP client.
type script func(c *client)

func initializeOnly(c *client) {
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}}}`)
	c.await("1")
}

func setupOnly(c *client) {
	initializeOnly(c)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	c.await("2")
}

// open initializes and opens a session (request id), returning its id.
func open(c *client, id string) string {
	if id == "2" {
		initializeOnly(c)
	}
	c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	var r struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	_ = json.Unmarshal(c.await(id), &r)
	if r.Result.SessionID == "" {
		c.t.Fatalf("session/new %s: no session id", id)
	}
	return r.Result.SessionID
}

func prompt(c *client, id, sid string) {
	c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"hello"}]}}`)
}

func onePrompt(c *client) {
	sid := open(c, "2")
	prompt(c, "3", sid)
	c.await("3")
}

// twoSessions: a prompt in one session, answered, then a prompt in a
// second session of the same process.
func twoSessions(c *client) {
	onePrompt(c)
	sid := open(c, "4")
	prompt(c, "5", sid)
	c.await("5")
}

// signalDuringWait: SIGTERM to acp-guard once the retry is scheduled.
func signalDuringWait(c *client) {
	sid := open(c, "2")
	prompt(c, "3", sid)
	c.awaitNotice()
	if err := c.Cmd.Process.Signal(platform.SIGTERM); err != nil {
		c.t.Fatal(err)
	}
	c.await("3")
}

// cancelDuringWait: the client cancels once the retry is scheduled.
func cancelDuringWait(c *client) {
	sid := open(c, "2")
	prompt(c, "3", sid)
	c.awaitNotice()
	c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `"}}`)
	c.await("3")
}

// actionDuringWait: the client acts on its prompt once the retry is
// scheduled (the _acp-guard/recovery extension request, id 9).
func actionDuringWait(action string) script {
	return func(c *client) {
		sid := open(c, "2")
		prompt(c, "3", sid)
		c.awaitNotice()
		c.send(`{"jsonrpc":"2.0","id":9,"method":"_acp-guard/recovery","params":{"sessionId":"` + sid + `","action":"` + action + `"}}`)
		c.await("9")
		c.await("3")
	}
}

// supersede: the client sends a new prompt to the session while the first
// one waits for its retry.
func supersede(c *client) {
	sid := open(c, "2")
	prompt(c, "3", sid)
	c.awaitNotice()
	prompt(c, "4", sid)
	c.await("3")
	c.await("4")
}

// client is an ACP client of one acp-guard process over real pipes
// (internal/acptest), answering the agent's requests as a permissive
// client does and keeping the responses it reads ahead.
type client struct {
	*acptest.Proc
	t    *testing.T
	seen map[string][]byte // responses read ahead, by id
}

func startClient(t *testing.T, bin string, args ...string) *client {
	t.Helper()
	p := acptest.Start(t, append([]string{bin}, args...), acptest.Options{Answer: acptest.Permissive, SkipInvalid: true})
	return &client{Proc: p, t: t, seen: map[string][]byte{}}
}

func (c *client) send(frame string) {
	c.t.Helper()
	c.Send(frame + "\n")
}

// next reads one frame; the agent's requests are answered as it is read.
func (c *client) next() ([]byte, frame) {
	f := c.Next()
	if f.IsResponse() {
		c.seen[string(f.ID)] = f.Raw
	}
	return f.Raw, decode(f.Raw)
}

// await reads until the response to id and returns it.
func (c *client) await(id string) []byte {
	for {
		if line, ok := c.seen[id]; ok {
			delete(c.seen, id)
			return line
		}
		c.next()
	}
}

// awaitNotice reads until a retry notice.
func (c *client) awaitNotice() {
	for {
		line, f := c.next()
		if f.Method == "session/update" && bytes.Contains(line, []byte(`"acpGuard":{"retry"`)) {
			return
		}
	}
}

// finish closes the client's input, reads to the end and waits for the
// process.
func (c *client) finish() {
	c.CloseStdin()
	c.RestBytes()
	c.Wait()
}
