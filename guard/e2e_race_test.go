package guard_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// relayInProc is transport.Run with hooks g around the demo agent, in
// this process (so -race sees the guard, its timers and the relay), over
// in-memory client pipes.
func relayInProc(t *testing.T, g *guard.Guard, agentArgs ...string) *acptest.Piped {
	t.Helper()
	return acptest.Pipe(t, acptest.Options{}, func(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
		_, err := transport.Run(ctx, transport.Options{
			Argv:   acptest.DemoAgent(t, agentArgs...),
			Grace:  time.Second,
			Stdin:  stdin,
			Stdout: stdout,
			Stderr: io.Discard,
			Hooks:  g,
		})
		return err
	})
}

// startInProc is relayInProc with a guard of doc.
func startInProc(t *testing.T, doc policy.Document, agentArgs ...string) *acptest.Piped {
	t.Helper()
	g := guard.New(guard.Config{
		Identity: observers.Identity{Command: "demo-agent"},
		Engine:   catalogue.Default(),
		Policy:   doc,
	})
	return relayInProc(t, g, agentArgs...)
}

// finishInProc closes the client's stdin and returns the rest of the
// output; transport.Run's error fails the test.
func finishInProc(t *testing.T, p *acptest.Piped) []acptest.Frame {
	t.Helper()
	rest, err := p.Finish()
	if err != nil {
		t.Errorf("transport.Run: %v", err)
	}
	return rest
}

// lateChunk is a session/update the agent writes (through test/echo) after
// its failed response: a late frame of the failed generation.
func lateChunk(session string) string {
	frame := fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"late"}}}}`, session)
	return `{"jsonrpc":"2.0","method":"test/echo","params":{"payload":"` + base64.StdEncoding.EncodeToString([]byte(frame)) + `"}}` + "\n"
}

// A cancel sent at varying offsets around the retry timer's deadline, after
// a late agent frame: whatever wins, the prompt is answered exactly once —
// with the late_activity ProviderError when the late frame came while the
// turn was held, else with "cancelled" or with the retry's end_turn.
func TestE2ERaceTimerCancelLateFrame(t *testing.T) {
	t.Parallel()
	doc := policy.Default()
	doc.Transient = policy.ClassPolicy{Retry: policy.Retry{Enabled: true, MaxRetries: 3, InitialIntervalSeconds: 1}, OnExhausted: policy.OutcomeStop}
	for i := range 20 {
		offset := 900*time.Millisecond + time.Duration(i)*10*time.Millisecond
		t.Run(offset.String(), func(t *testing.T) {
			t.Parallel()
			p := startInProc(t, doc, "--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp", "--delay", "20ms")
			p.Send(acptest.Initialize(1), acptest.SessionNew(2))
			p.Until("1")
			p.Until("2")
			p.Send(acptest.Prompt(3, "sess-1"))
			var frames []acptest.Frame
			for len(retryNotices(t, frames)) == 0 {
				f, ok := p.TryNext()
				if !ok || f.IsResponse() {
					t.Fatalf("no retry notice before %s", f.Raw)
				}
				frames = append(frames, f)
			}
			armed := time.Now()
			p.Send(lateChunk("sess-1"))
			time.Sleep(time.Until(armed.Add(offset)))
			p.Send(acptest.Cancel("sess-1"))
			frames = append(frames, p.Until("3")...)
			frames = append(frames, finishInProc(t, p)...)
			resp := acptest.ResponsesTo(frames, "3")
			if len(resp) != 1 {
				t.Fatalf("responses to 3: got %d, want exactly 1", len(resp))
			}
			if resp[0].Error != nil {
				// The late frame reached the guard while it held the turn
				// (the usual order): the gate stops the recovery.
				if pe, _ := errorData(t, resp[0]); pe.Recovery.Reason != "late_activity" || pe.ReplaySafe {
					t.Fatalf("prompt answered %s, want a result or a late_activity stop", resp[0].Raw)
				}
				return
			}
			if sr := stopReason(t, resp[0]); sr != "cancelled" && sr != "end_turn" {
				t.Errorf("stopReason: got %q, want cancelled or end_turn", sr)
			}
			if n := len(retryNotices(t, frames)); n != 1 {
				t.Errorf("retry notices: got %d, want 1", n)
			}
		})
	}
}

// An agent that answers the client's prompt a second time while the guard
// waits to retry it: the duplicate is neither forwarded nor taken as a
// second failure (no second notice, no second timer); the retry's answer
// is the only one.
func TestE2ELateDuplicateResponse(t *testing.T) {
	t.Parallel()
	doc := policy.Default()
	doc.Transient = policy.ClassPolicy{Retry: policy.Retry{Enabled: true, MaxRetries: 3, InitialIntervalSeconds: 1}, OnExhausted: policy.OutcomeStop}
	p := startInProc(t, doc, "--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp")
	p.Send(acptest.Initialize(1), acptest.SessionNew(2))
	p.Until("1")
	p.Until("2")
	p.Send(acptest.Prompt(3, "sess-1"))
	var frames []acptest.Frame
	for len(retryNotices(t, frames)) == 0 {
		f, ok := p.TryNext()
		if !ok || f.IsResponse() {
			t.Fatalf("no retry notice before %s", f.Raw)
		}
		frames = append(frames, f)
	}
	dup := `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error","data":{"message":"stream disconnected before completion: late"}}}`
	p.Send(`{"jsonrpc":"2.0","method":"test/echo","params":{"payload":"` + base64.StdEncoding.EncodeToString([]byte(dup)) + `"}}` + "\n")
	frames = append(frames, p.Until("3")...)
	frames = append(frames, finishInProc(t, p)...)
	resp := acptest.ResponsesTo(frames, "3")
	if len(resp) != 1 || resp[0].Error != nil || stopReason(t, resp[0]) != "end_turn" {
		t.Fatalf("responses to 3: got %d, first %s, want one end_turn", len(resp), resp[0].Raw)
	}
	if n := len(retryNotices(t, frames)); n != 1 {
		t.Errorf("retry notices: got %d, want 1", n)
	}
}
