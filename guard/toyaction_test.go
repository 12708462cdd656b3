package guard

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// actionToy is the worked example of adding a recovery action: "toy"
// retries at once, announced by a notice of its own. Adding it is its
// part (the work) plus one row of recoveryActions — nothing else in the
// guard changes. No policy names it, so the test puts it in the place of
// the policy's retry through the decideFor seam.
const actionToy policy.Action = "toy"

// TestToyAction drives a failed turn through the guard with the toy
// installed: the decision names it, its work runs, the prompt moves by
// its row's event, its notice reads its row's words, and the client
// gets exactly one answer.
func TestToyAction(t *testing.T) {
	ran := 0
	// The part: the toy's work, run once its record is durable.
	toyStart := func(rc *recovery, c transport.Ctl, p *prompt, f *failure, d policy.Decision, _ string) {
		ran++
		d.Delay, d.Deadline = 0, time.Time{} // at once
		rc.arm(c, p, f, d, "")
	}
	// The row.
	row := actionDesc{on: onRetry, start: toyStart, notice: "toy",
		words: func(d policy.Decision, maxRetries int) (string, string) {
			return "toying", fmt.Sprintf("toy %d/%d", d.Attempt, maxRetries)
		}}
	recoveryActions[actionToy] = row
	realDecide := decideFor
	decideFor = func(rc *recovery, c transport.Ctl, p *prompt, f *failure) (policy.Decision, string) {
		d, next := realDecide(rc, c, p, f)
		if d.Action == policy.ActionRetry {
			d.Action = actionToy
		}
		return d, next
	}
	t.Cleanup(func() { delete(recoveryActions, actionToy); decideFor = realDecide })
	checkActionRow(t, actionToy, row)

	doc := policy.Default()
	doc.Transient = policy.ClassPolicy{Retry: policy.Retry{Enabled: true, MaxRetries: 3, InitialIntervalSeconds: 5}, OnExhausted: policy.OutcomeStop}
	var moves, notices []string
	var reports []TurnReport
	g := New(Config{Identity: observers.Identity{Flag: "claude-agent-acp"}, Engine: catalogue.Default(), Policy: doc,
		Events: func(e Event) {
			switch e := e.(type) {
			case Transition:
				moves = append(moves, e.From+" --"+e.On+"--> "+e.To+" "+e.Decision.Action)
			case NoticeSent:
				notices = append(notices, e.Action+": "+e.Text)
			case Answered:
				reports = append(reports, e.Report)
			}
		}})
	v := transport.NewVirtual(epochForTest)
	r := transport.NewRelay(transport.Config{Hooks: g}, v)
	line := func(s string) transport.Line { return transport.Line{Bytes: []byte(s + "\n")} }
	r.FromClient(line(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`))
	r.FromAgent(line(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}`))
	r.FromClient(line(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`))
	v.TakeClient()
	v.TakeAgent()
	r.FromAgent(line(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}}`))
	v.Advance(0)
	if ran != 1 {
		t.Fatalf("the toy's work ran %d times, want once", ran)
	}
	sent := v.TakeAgent()
	if len(sent) != 1 || !strings.Contains(string(sent[0]), `"id":"acp-guard:1"`) {
		t.Fatalf("the agent got %q, want the toy's one retry", sent)
	}
	r.FromAgent(line(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done"}}}}`))
	r.FromAgent(line(`{"jsonrpc":"2.0","id":"acp-guard:1","result":{"stopReason":"end_turn"}}`))

	want := []string{"active --retry--> retry_wait toy", "retry_wait --due--> retrying ", "retrying --succeed--> answered none"}
	if got := strings.Join(moves, "; "); got != strings.Join(want, "; ") {
		t.Errorf("moves:\n got %s\nwant %s", got, strings.Join(want, "; "))
	}
	if len(notices) != 1 || !strings.HasPrefix(notices[0], "toy: ") || !strings.Contains(notices[0], "toying") || !strings.Contains(notices[0], "(toy 1/3)") {
		t.Errorf("notices %q, want one toy notice in the row's words", notices)
	}
	var answers []string
	for _, b := range v.TakeClient() {
		if s := string(b); strings.Contains(s, `"id":2`) {
			answers = append(answers, s)
		}
	}
	if len(answers) != 1 || !strings.Contains(answers[0], `"stopReason":"end_turn"`) {
		t.Errorf("the client got %q, want exactly one end_turn answer", answers)
	}
	if len(reports) != 1 || reports[0].Decision == nil || reports[0].Decision.Action != string(actionToy) {
		t.Errorf("reports %+v, want one whose decision is the toy", reports)
	}
}
