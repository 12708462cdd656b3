package demoagent

import (
	"fmt"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// Compaction scenarios (acp-guard's request.compact_then_retry). Every
// client prompt starts with an available_commands_update, as codex-acp,
// claude-agent-acp and Copilot CLI send one per session. A session's
// prompts fail with a context overflow shaped like --agent-name's adapter
// (default codex-acp: -32603 with the OpenAI context_length_exceeded body)
// until the session's compaction command started; the command's turn
// behaves as the scenario says. Later prompts succeed.

// compactMode is how the compaction command's turn behaves.
type compactMode struct {
	name, what string
	commands   []string // advertised command names
	run        func(t *turn) error
	overflows  bool // prompts keep overflowing after the compaction
	textFirst  bool // an overflowing prompt streams a message chunk first (not replay-safe)
}

const compactSummary = "Summarized the conversation to free context."

var compactModes = []compactMode{
	{name: "compact", what: "advertises compact; /compact streams a summary note and ends end_turn", commands: []string{"init", "compact"}, run: compactOK},
	{name: "compact-compress", what: "advertises only compress (like qwen-code); /compress streams a note and ends end_turn", commands: []string{"compress"}, run: compactOK},
	{name: "compact-none", what: "advertises no compaction command (init, review)", commands: []string{"init", "review"}, run: compactOK},
	{name: "compact-fail", what: "advertises compact; /compact answers a JSON-RPC error", commands: []string{"compact"}, run: func(t *turn) error {
		return t.fail(&rpcError{Code: codeInternalError, Message: "Compression was not beneficial for this history size."})
	}},
	{name: "compact-empty", what: "advertises compact; /compact ends end_turn at once with no update", commands: []string{"compact"}, run: func(t *turn) error {
		return t.end(acp.StopReasonEndTurn)
	}},
	{name: "compact-again", what: "advertises compact; /compact succeeds but the retry overflows again", commands: []string{"compact"}, run: compactOK, overflows: true},
	{name: "compact-tool", what: "advertises compact; /compact starts a tool call, then ends end_turn", commands: []string{"compact"}, run: func(t *turn) error {
		if err := t.update(acp.StartToolCall("compact-1", "Read File", acp.WithStartKind(acp.ToolKindRead))); err != nil {
			return err
		}
		return compactOK(t)
	}},
	{name: "compact-effect", what: "advertises compact; /compact asks the client to read a file, then ends end_turn", commands: []string{"compact"}, run: func(t *turn) error {
		if err := t.a.w.write(t.lateRequest(acp.ClientMethodFsReadTextFile, acp.ReadTextFileRequest{SessionId: acp.SessionId(t.sessionID), Path: "/tmp/demo-agent/compact.txt"}), true); err != nil {
			return err
		}
		return compactOK(t)
	}},
	{name: "compact-crash", what: "advertises compact; /compact streams a note and the agent exits (--exit-code)", commands: []string{"compact"}, run: promptCrash(false)},
	{name: "compact-after-text", what: "advertises compact; an overflowing prompt streams a message chunk first", commands: []string{"compact"}, run: compactOK, textFirst: true},
	{name: "compact-hang", what: "advertises compact; /compact streams a note, then waits until cancelled", commands: []string{"compact"}, run: func(t *turn) error {
		if err := t.message("Compacting…"); err != nil {
			return err
		}
		if err := t.a.w.flush(); err != nil {
			return err
		}
		<-t.ctx.Done()
		return t.ctx.Err()
	}},
}

// compactAgents holds the sessions each running agent compacted.
var compactAgents sync.Map // *agent → *compactedSessions

type compactedSessions struct {
	mu   sync.Mutex
	done map[string]bool
}

func compactedOf(a *agent) *compactedSessions {
	v, _ := compactAgents.LoadOrStore(a, &compactedSessions{done: map[string]bool{}})
	return v.(*compactedSessions)
}

func init() {
	for _, m := range compactModes {
		scenarios = append(scenarios, &scenario{
			name: m.name, agentName: "codex-acp", prompt: promptCompact(m),
			description: m.what + "; prompts overflow the context window until compacted",
		})
	}
	scenarios = append(scenarios, &scenario{
		name: "compact-late", agentName: "codex-acp", prompt: promptCompactLate,
		description: "advertises compact; the first prompt overflows and, in the same write, a message chunk follows; later prompts succeed",
	})
}

func promptCompact(m compactMode) func(t *turn) error {
	return func(t *turn) error {
		if cmd, ok := strings.CutPrefix(strings.TrimSpace(t.text), "/"); ok && contains(m.commands, cmd) {
			// Started is compacted: whatever the command's turn does, later
			// prompts of the session fit (unless the mode overflows).
			cs := compactedOf(t.a)
			cs.mu.Lock()
			cs.done[t.sessionID] = true
			cs.mu.Unlock()
			return m.run(t)
		}
		if err := t.raw(commandsLine(t.sessionID, m.commands)); err != nil {
			return err
		}
		cs := compactedOf(t.a)
		cs.mu.Lock()
		done := cs.done[t.sessionID]
		cs.mu.Unlock()
		if done && !m.overflows {
			return promptSuccess(t)
		}
		if m.textFirst {
			if err := t.message("Reading the whole repository…"); err != nil {
				return err
			}
		}
		f, err := t.providerFailure("", KindContextOverflow)
		if err != nil {
			return err
		}
		return t.failWith(f)
	}
}

// promptCompactLate fails the first prompt with a context overflow and, in
// the same write, shows that the agent still works on it.
func promptCompactLate(t *turn) error {
	if t.n > 1 {
		return promptSuccess(t)
	}
	if err := t.raw(commandsLine(t.sessionID, []string{"compact"})); err != nil {
		return err
	}
	f, err := t.providerFailure("", KindContextOverflow)
	if err != nil || f.rpc == nil {
		return fmt.Errorf("compact-late needs an error-shaped overflow: %v", err)
	}
	return t.a.w.write(append(errorLine(t.id, f.rpc), textLine(t.sessionID, updateMessageChunk, "still working on it")...), true)
}

// compactOK is a compaction turn that works: one message chunk, end_turn.
func compactOK(t *turn) error {
	if err := t.message(compactSummary); err != nil {
		return err
	}
	return t.endTurn()
}

func commandsLine(sessionID string, names []string) []byte {
	cmds := make([]acp.AvailableCommand, len(names))
	for i, n := range names {
		cmds[i] = acp.AvailableCommand{Name: n, Description: "the demo agent's " + n}
	}
	return updateLine(sessionID, acp.SessionAvailableCommandsUpdate{SessionUpdate: "available_commands_update", AvailableCommands: cmds})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
