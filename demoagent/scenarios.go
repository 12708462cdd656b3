package demoagent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// ScenarioInfo names a scenario and says in one line what it does.
type ScenarioInfo struct {
	Name        string
	Description string
}

// scenario is one script. prompt runs a whole prompt turn and answers it
// (or returns t.ctx.Err() when cancelled, or an *ExitError).
type scenario struct {
	name         string
	description  string
	agentName    string // default agentInfo.name; empty: DefaultAgentName
	stayAfterEOF bool   // keep running after stdin EOF until killed
	// start runs before the first frame is read; stop, if any, runs when
	// Run returns.
	start  func(a *agent) (stop func(), err error)
	prompt func(t *turn) error
	// request, if set, sees each client request first and reports whether
	// it handled it (the set-up scenarios fail initialize or session/new).
	request func(a *agent, m *inbound) bool
}

// Control chunk texts of the cursor-* scenarios.
const (
	cursorPingTimeout = "Error: RetriableError: [unavailable] PING timed out"
	cursorStalled     = "Error: RetriableError: Connection stalled"
)

var scenarios = []*scenario{
	{name: "success", description: "one thought chunk, two message chunks, end_turn", prompt: promptSuccess},
	{name: "tools", description: "thought, tool_call and updates around an fs/read_text_file request, message, end_turn", prompt: promptTools},
	{name: "effects", description: "session/request_permission, fs/write_text_file, terminal/create requests, message, end_turn", prompt: promptEffects},
	{name: "stream", description: "--count notifications of --size bytes each (default 20000 x 64 B), end_turn", prompt: promptStream},
	{name: "pingpong", description: "--count fs/read_text_file requests (default 20000), each sent once the last is answered, a message, end_turn: pass-through round trips", prompt: promptPingPong},
	{name: "empty", description: "end_turn at once, no updates", prompt: func(t *turn) error { return t.end(acp.StopReasonEndTurn) }},
	{name: "cursor-retriable", agentName: "cursor-agent", description: "Cursor control chunk \"" + cursorPingTimeout + "\", end_turn", prompt: cursorScript(cursorPingTimeout, false, false)},
	{name: "cursor-incident", agentName: "cursor-agent", description: "thought, tool_call left in progress, Cursor control chunk, end_turn", prompt: cursorScript(cursorPingTimeout, true, false)},
	{name: "cursor-resumed", agentName: "cursor-agent", description: "Cursor control chunk, then real text \"Here is the answer\", end_turn", prompt: cursorScript(cursorPingTimeout, false, true)},
	{name: "cursor-stalled", agentName: "cursor-agent", description: "Cursor control chunk \"" + cursorStalled + "\", end_turn", prompt: cursorScript(cursorStalled, false, false)},
	{name: "codex-error", agentName: "codex-acp", description: "codex-acp style JSON-RPC error: stream disconnected before completion", prompt: errorScript(familyCodex, KindTransient)},
	{name: "claude-error", agentName: "@zed-industries/claude-agent-acp", description: "claude-agent-acp style JSON-RPC error: API Error 529 overloaded_error", prompt: errorScript(familyClaude, KindOverloaded)},
	{name: "gemini-error", agentName: "gemini-cli", description: "gemini style JSON-RPC error: 429 RESOURCE_EXHAUSTED with retryDelay", prompt: errorScript(familyGemini, KindRateLimit)},
	{name: "quota-reset", agentName: "codex-acp", description: "quota error with a reset hint --reset-in from now, shaped like --agent-name's adapter", prompt: errorScript("", KindQuota)},
	{name: "auth-error", description: "401 invalid API key error, shaped like --agent-name's adapter", prompt: errorScript("", KindAuth)},
	{name: "context-overflow", description: "prompt too long error, shaped like --agent-name's adapter", prompt: errorScript("", KindContextOverflow)},
	{name: "unknown-error", description: "an unclassifiable JSON-RPC error", prompt: errorScript("", KindUnknown)},
	{name: "fail-then-succeed", description: "the first --fail prompts fail with --error before any output, later ones succeed", prompt: promptFailThenSucceed},
	{name: "fail-model", description: "prompts fail while the session model is --bad-model, succeed naming the model otherwise", prompt: promptFailModel},
	{name: "text-then-fail", description: "one message chunk, then a transient JSON-RPC error", prompt: promptTextThenFail},
	{name: "crash", description: "one message chunk, a stderr line, then exit --exit-code without answering", prompt: promptCrash(false)},
	{name: "crash-signal", description: "one message chunk, a stderr line, then SIGKILL to itself mid-turn", prompt: promptCrash(true)},
	{name: "hang", stayAfterEOF: true, description: "never answers prompts (cancel still ends them unless --ignore-cancel); stays after stdin EOF", prompt: promptHang},
	{name: "ignore-term", stayAfterEOF: true, start: startIgnoreTerm, description: "ignores SIGTERM and SIGINT, answers like success, stays after stdin EOF until killed", prompt: promptSuccess},
	{name: "grandchild", start: startGrandchild, description: "starts a grandchild (sleep 300) holding stdout/stderr open, answers like success", prompt: promptSuccess},
	{name: "stderr-flood", description: "writes --count lines (default 100000) to stderr while answering; end_turn after the flood", prompt: promptStderrFlood},
	{name: "huge-line", description: "one message notification of --size bytes (default 20 MiB), end_turn", prompt: promptHugeLine},
	{name: "non-json", description: "non-JSON lines (LF, CRLF) and an empty line between message chunks, end_turn", prompt: promptNonJSON},
	{name: "echo", description: "answers like success; test/echo payloads are written to stdout verbatim (available in every scenario)", prompt: promptSuccess},
}

// Scenarios lists the scenarios in a stable order.
func Scenarios() []ScenarioInfo {
	out := make([]ScenarioInfo, len(scenarios))
	for i, s := range scenarios {
		out[i] = ScenarioInfo{Name: s.name, Description: s.description}
	}
	return out
}

func lookup(name string) (*scenario, bool) {
	if name == "" {
		name = "success"
	}
	for _, s := range scenarios {
		if s.name == name {
			return s, true
		}
	}
	return nil, false
}

func promptSuccess(t *turn) error {
	if err := t.thought("Thinking about the request."); err != nil {
		return err
	}
	if err := t.message("Hello from the demo agent. "); err != nil {
		return err
	}
	if err := t.message("This is the answer."); err != nil {
		return err
	}
	return t.endTurn()
}

func promptTools(t *turn) error {
	const id = "call-1"
	const path = "/tmp/demo-agent/input.txt"
	if err := t.thought("I should read the file."); err != nil {
		return err
	}
	if err := t.update(acp.StartToolCall(id, "Read File",
		acp.WithStartKind(acp.ToolKindRead), acp.WithStartStatus(acp.ToolCallStatusPending),
		acp.WithStartLocations([]acp.ToolCallLocation{{Path: path}}))); err != nil {
		return err
	}
	if err := t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusInProgress))); err != nil {
		return err
	}
	resp, err := t.call(acp.ClientMethodFsReadTextFile, acp.ReadTextFileRequest{SessionId: acp.SessionId(t.sessionID), Path: path})
	if err != nil {
		return err
	}
	status, summary := acp.ToolCallStatusCompleted, "The file could not be read."
	var got struct {
		Content string `json:"content"`
	}
	if resp.Error != nil {
		status = acp.ToolCallStatusFailed
	} else if json.Unmarshal(resp.Result, &got) == nil {
		summary = fmt.Sprintf("The file has %d bytes.", len(got.Content))
	}
	if err := t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(status))); err != nil {
		return err
	}
	if err := t.message(summary); err != nil {
		return err
	}
	return t.endTurn()
}

func promptEffects(t *turn) error {
	sid := acp.SessionId(t.sessionID)
	const path = "/tmp/demo-agent/output.txt"
	title := "Write " + path
	kind, status := acp.ToolKindEdit, acp.ToolCallStatusPending
	if _, err := t.call(acp.ClientMethodSessionRequestPermission, acp.RequestPermissionRequest{
		SessionId: sid,
		ToolCall:  acp.ToolCallUpdate{ToolCallId: "call-1", Title: &title, Kind: &kind, Status: &status},
		Options: []acp.PermissionOption{
			{OptionId: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		},
	}); err != nil {
		return err
	}
	if _, err := t.call(acp.ClientMethodFsWriteTextFile, acp.WriteTextFileRequest{SessionId: sid, Path: path, Content: "written by the demo agent\n"}); err != nil {
		return err
	}
	if _, err := t.call(acp.ClientMethodTerminalCreate, acp.CreateTerminalRequest{SessionId: sid, Command: "echo", Args: []string{"hello"}}); err != nil {
		return err
	}
	if err := t.message("I wrote the file and ran a command."); err != nil {
		return err
	}
	return t.endTurn()
}

// promptStream writes pre-built frames through the buffered writer and
// flushes once, at the end of the turn.
func promptStream(t *turn) error {
	frame := paddedMessage(t.sessionID, t.a.opts.Size)
	done := t.ctx.Done()
	for range t.a.opts.Count {
		if t.a.opts.Delay > 0 {
			if err := t.pause(); err != nil {
				return err
			}
		} else {
			select {
			case <-done:
				return t.ctx.Err()
			default:
			}
		}
		t.sent++
		if err := t.a.w.write(frame, false); err != nil {
			return err
		}
	}
	return t.endTurn()
}

// promptPingPong sends --count fs/read_text_file requests one after the
// other, each once the client answered the last: every round trip is a
// request and an answer that a relay passes as they are.
func promptPingPong(t *turn) error {
	sid := acp.SessionId(t.sessionID)
	params := acp.ReadTextFileRequest{SessionId: sid, Path: "/tmp/demo-agent/input.txt"}
	for range t.a.opts.Count {
		if _, err := t.call(acp.ClientMethodFsReadTextFile, params); err != nil {
			return err
		}
	}
	if err := t.message("Read."); err != nil {
		return err
	}
	return t.endTurn()
}

// control returns the cursor control chunk text, honouring --text.
func (t *turn) control(def string) string {
	if t.a.opts.Text != "" {
		return t.a.opts.Text
	}
	return def
}

func cursorScript(text string, incident, resumed bool) func(t *turn) error {
	return func(t *turn) error {
		if incident {
			if err := t.thought("Let me look at the file."); err != nil {
				return err
			}
			if err := t.update(acp.StartToolCall("call-1", "Read File",
				acp.WithStartKind(acp.ToolKindRead), acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
				return err
			}
		}
		if err := t.message(t.control(text)); err != nil {
			return err
		}
		if resumed {
			if err := t.message("Here is the answer"); err != nil {
				return err
			}
		}
		return t.endTurn()
	}
}

// failWith ends the turn with f: the JSON-RPC error, or the control chunk
// and end_turn.
func (t *turn) failWith(f failure) error {
	if f.rpc != nil {
		return t.fail(f.rpc)
	}
	if err := t.message(f.chunk); err != nil {
		return err
	}
	return t.endTurn()
}

// providerFailure builds the failure of kind shaped like family, or like
// the agent name's family when family is empty.
func (t *turn) providerFailure(family, kind string) (failure, error) {
	if family == "" {
		family = familyOf(t.a.opts.AgentName)
	}
	return providerFailure(family, kind, t.a.opts.Now(), t.a.opts.ResetIn)
}

func errorScript(family, kind string) func(t *turn) error {
	return func(t *turn) error {
		f, err := t.providerFailure(family, kind)
		if err != nil {
			return err
		}
		return t.failWith(f)
	}
}

// failKind is the kind of error fail-then-succeed and fail-model use.
func (t *turn) failKind() string {
	if t.a.opts.Error != "" {
		return t.a.opts.Error
	}
	if familyOf(t.a.opts.AgentName) == familyClaude {
		return KindOverloaded
	}
	return KindTransient
}

func promptFailThenSucceed(t *turn) error {
	if t.n <= t.a.opts.Fail {
		return errorScript("", t.failKind())(t)
	}
	return promptSuccess(t)
}

func promptFailModel(t *turn) error {
	if t.model == t.a.opts.BadModel {
		return errorScript("", t.failKind())(t)
	}
	if err := t.message("Answer from " + t.model + "."); err != nil {
		return err
	}
	return t.endTurn()
}

func promptTextThenFail(t *turn) error {
	if err := t.message("Partial answer before the failure."); err != nil {
		return err
	}
	f, err := t.providerFailure("", t.failKind())
	if err != nil {
		return err
	}
	if f.rpc == nil { // Cursor fails with a chunk; this scenario wants an error
		f, _ = providerFailure(familyGeneric, KindTransient, t.a.opts.Now(), t.a.opts.ResetIn)
	}
	return t.fail(f.rpc)
}

func promptCrash(signal bool) func(t *turn) error {
	return func(t *turn) error {
		if err := t.message("Working on it"); err != nil {
			return err
		}
		if err := t.a.w.flush(); err != nil {
			return err
		}
		t.a.logf("fatal: simulated crash in prompt %d", t.n)
		if signal {
			return &ExitError{Signal: platform.SIGKILL}
		}
		return &ExitError{Code: t.a.opts.ExitCode}
	}
}

func promptHang(t *turn) error {
	if t.a.opts.IgnoreCancel {
		<-t.a.ctx.Done()
		return t.a.ctx.Err()
	}
	<-t.ctx.Done()
	return t.ctx.Err()
}

func startIgnoreTerm(a *agent) (func(), error) {
	signal.Ignore(platform.SIGTERM, platform.SIGINT)
	a.logf("ignoring SIGTERM and SIGINT")
	return func() { signal.Reset(platform.SIGTERM, platform.SIGINT) }, nil
}

// startGrandchild starts opts.Grandchild with the agent's stdout and stderr
// when they are files (so it holds the pipes open), and does not wait for
// it beyond reaping it.
func startGrandchild(a *agent) (func(), error) {
	cmd := exec.Command(a.opts.Grandchild[0], a.opts.Grandchild[1:]...)
	if f, ok := a.w.underlying.(*os.File); ok {
		cmd.Stdout = f
	}
	if f, ok := a.errOut.W.(*os.File); ok {
		cmd.Stderr = f
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("demo agent: starting grandchild: %w", err)
	}
	a.logf("started grandchild pid %d", cmd.Process.Pid)
	// Reaps the grandchild if it ends while the agent runs; it needs nothing
	// else and exits with the grandchild (or with the process).
	go func() { _ = cmd.Wait() }()
	return nil, nil
}

func promptStderrFlood(t *turn) error {
	done := make(chan error, 1)
	count := t.a.opts.Count
	// The flood goroutine is waited for below before the turn ends.
	go func() {
		bw := bufio.NewWriterSize(t.a.errOut, 64<<10)
		for i := 1; i <= count; i++ {
			if _, err := fmt.Fprintf(bw, "demo-agent: flood line %d of %d: lorem ipsum dolor sit amet\n", i, count); err != nil {
				done <- err
				return
			}
		}
		done <- bw.Flush()
	}()
	if err := t.message("Flooding stderr while answering."); err != nil {
		<-done
		return err
	}
	if err := <-done; err != nil {
		return fmt.Errorf("writing stderr: %w", err)
	}
	return t.endTurn()
}

func promptHugeLine(t *turn) error {
	if err := t.raw(paddedMessage(t.sessionID, t.a.opts.Size)); err != nil {
		return err
	}
	return t.endTurn()
}

func promptNonJSON(t *turn) error {
	steps := []func() error{
		func() error { return t.message("before the noise ") },
		func() error { return t.raw([]byte("this is not json {\n")) },
		func() error { return t.message("between the noise ") },
		func() error { return t.raw([]byte("this is not json {\r\n")) },
		func() error { return t.raw([]byte("\n")) },
		func() error { return t.message("after the noise") },
		t.endTurn,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}
