//go:build interop

package suite

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	fp "github.com/acp-guard/acp-guard/dev/interop/fakeprovider"
	acp "github.com/coder/acp-go-sdk"
)

// Compaction through acp-guard (request.compact_then_retry) against real
// agents: the fake provider answers the first model request of the prompt
// with the provider's context-length error and every later one normally,
// so the agent's compaction command and acp-guard's one retry succeed.
// docs/INTEROP.md, "Context overflow: compact, then retry", records what
// each agent does.

// compactCase is what one agent is expected to do.
type compactCase struct {
	agent    string
	reason   string // "" : recovered; else the final recovery.reason
	requests int    // provider requests: overflow, compaction, retry
	notices  int
	// foreverReason: the reason when every request overflows (recovered
	// agents only).
	foreverReason string
}

var compactCases = []compactCase{
	// codex-acp 0.16.0 advertises compact; /compact is one summarisation
	// request, then end_turn.
	{agent: "codex", requests: 3, notices: 1, foreverReason: "compaction_failed"},
	// claude-agent-acp 0.23.1 advertises compact, but after a failed turn it
	// answers the next prompt — acp-guard's /compact — at once with a stale
	// empty end_turn.
	{agent: "claude", reason: "compaction_empty", notices: 1},
	// gemini-cli 0.61.0 offers no compaction command over ACP.
	{agent: "gemini", reason: "no_compaction_command", requests: 1},
}

func TestInteropCompaction(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "compact", run: (*world).compact},
		// The provider keeps refusing: the compaction's own request
		// overflows too (only for agents that compact at all).
		{name: "compact-forever", run: (*world).compactForever,
			applies: func(ac agentCase) bool { return compactCaseOf(ac).foreverReason != "" }},
	})
}

func compactCaseOf(ac agentCase) compactCase {
	i := slices.IndexFunc(compactCases, func(c compactCase) bool { return c.agent == ac.name })
	if i < 0 {
		panic("no compactCase for " + ac.name)
	}
	return compactCases[i]
}

// compacting starts acp-guard with the suite policy plus
// request.compact_then_retry.
func (w *world) compacting() *proc {
	pol := filepath.Join(w.base, "compact-policy.json")
	doc := strings.TrimSuffix(strings.TrimSpace(strings.Replace(suitePolicy, "%q", `"`+w.ac.fallback+`"`, 1)), "}") +
		`,"request":{"compact_then_retry":true}}`
	if err := os.WriteFile(pol, []byte(doc), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return w.start("compact", false, "--policy", pol)
}

// compact: one overflow, then the agent's compaction command, then the
// re-sent prompt — or the reason this agent cannot.
func (w *world) compact() {
	t, cc := w.t, compactCaseOf(w.ac)
	p := w.compacting()
	got, n, marked := p.compactTurn(w.script("context_overflow", 1))
	t.Logf("compact: requests %d, marked compaction updates %d, response %s", n, marked, got.Response.Raw)
	if got.Responses != 1 {
		t.Errorf("responses to the prompt: got %d, want 1", got.Responses)
	}
	ns := expectNotices(t, "compact", got, cc.notices)
	if len(ns) == 1 && (ns[0].Action != "compact" || ns[0].Code != "context_overflow") {
		t.Errorf("notice: got %+v, want compact for context_overflow", ns[0])
	}
	if cc.reason != "" {
		pe := expectError(t, "compact", got, "context_overflow", "request")
		if pe != nil && (pe.Recovery.Action != "compact" || pe.Recovery.Reason != cc.reason) {
			t.Errorf("recovery: got %+v, want compact %s", pe.Recovery, cc.reason)
		}
		if w.ac.staleAfterError {
			w.expectBug(bugStaleTurnAfterError, pe != nil && pe.Recovery.Reason == "compaction_empty",
				"the compaction command was not answered with the stale empty end_turn")
		}
		if cc.requests != 0 && n != cc.requests {
			t.Errorf("provider requests: got %d, want %d", n, cc.requests)
		}
		p.stop(true)
		return
	}
	if got.StopReason() != "end_turn" || got.Text() == "" {
		t.Errorf("got %s text %q, want end_turn with text", got.Response.Raw, got.Text())
	}
	var res struct {
		Meta struct {
			AcpGuard struct {
				Compacted bool `json:"compacted"`
			} `json:"acpGuard"`
		} `json:"_meta"`
	}
	if json.Unmarshal(got.Response.Result, &res) != nil || !res.Meta.AcpGuard.Compacted {
		t.Errorf("result: got %s, want _meta.acpGuard.compacted", got.Response.Result)
	}
	if n != cc.requests {
		t.Errorf("provider requests: got %d, want %d (overflow, compaction, retry)", n, cc.requests)
	}
	if marked == 0 {
		t.Errorf("no update carried _meta.acpGuard.compaction")
	}
	p.stop(true)
}

// compactForever: every request overflows, the compaction's own too.
func (w *world) compactForever() {
	cc := compactCaseOf(w.ac)
	p := w.compacting()
	got, n, _ := p.compactTurn(w.script("context_overflow", -1))
	w.t.Logf("compact, overflow forever: requests %d, response %s", n, got.Response.Raw)
	if pe := expectError(w.t, "compact-forever", got, "context_overflow", "request"); pe != nil && (pe.Recovery.Action != "compact" || pe.Recovery.Reason != cc.foreverReason) {
		w.t.Errorf("recovery: got %+v, want compact %s", pe.Recovery, cc.foreverReason)
	}
	p.stop(true)
}

// compactTurn opens a session, waits (bounded) for the agent's
// available_commands_update, runs one prompt and returns the turn, the
// provider's chat requests and how many updates carried the compaction
// mark.
func (p *proc) compactTurn(script fp.Script) (Turn, int, int) {
	t := p.w.t
	p.w.setScript(script)
	ctx := p.w.ctx
	mark := p.Mark()
	sid, _, err := p.NewSession(ctx, p.cwd)
	if err != nil {
		p.w.fatalf("session/new: %v", err)
	}
	// Agents send their commands on their own schedule; gemini sends none
	// that matter, so this wait only bounds how long to give them.
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	_, _, werr := p.WaitFor(wctx, mark, func(f Frame) bool {
		return f.Method == acp.ClientMethodSessionUpdate && sessionOf(f) == sid && updateKind(f) == "available_commands_update"
	})
	wcancel()
	t.Logf("available_commands_update before the prompt: %v", werr == nil)
	turn, err := p.Prompt(ctx, sid, "Say hello")
	if err != nil {
		p.w.fatalf("prompt: %v", err)
	}
	marked := 0
	for _, f := range turn.Updates {
		var u struct {
			Update struct {
				Meta struct {
					AcpGuard struct {
						Compaction bool `json:"compaction"`
					} `json:"acpGuard"`
				} `json:"_meta"`
			} `json:"update"`
		}
		if json.Unmarshal(f.Params, &u) == nil && u.Update.Meta.AcpGuard.Compaction {
			marked++
		}
	}
	return turn, p.w.chatRequests(), marked
}
