package guard_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// inProc is transport.Run with a Guard around the demo agent, in this
// process (so -race sees the guard, its timers and the relay), with
// io.Pipe client streams.
type inProc struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func startInProc(t *testing.T, doc policy.Document, agentArgs ...string) *inProc {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), e2eWatchdog)
	p := &inProc{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	g := guard.New(guard.Config{
		Identity: observers.Identity{Command: "demo-agent"},
		Engine:   catalogue.Default(),
		Policy:   doc,
	})
	go func() {
		_, err := transport.Run(ctx, transport.Options{
			Argv:   demoArgv(t, agentArgs...),
			Grace:  time.Second,
			Stdin:  inR,
			Stdout: outW,
			Stderr: io.Discard,
			Hooks:  g,
		})
		outW.Close() // EOF for the client once the relay is done
		p.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		_, _ = io.Copy(io.Discard, outR)
		<-p.done
		cancel()
	})
	return p
}

func (p *inProc) send(frames ...string) {
	p.t.Helper()
	for _, f := range frames {
		if _, err := io.WriteString(p.in, f); err != nil {
			p.t.Fatalf("writing to the relay: %v", err)
		}
	}
}

func (p *inProc) next() (e2eFrame, bool) {
	p.t.Helper()
	b, err := p.out.ReadBytes('\n')
	if err == io.EOF && len(b) == 0 {
		return e2eFrame{}, false
	}
	if err != nil {
		p.t.Fatalf("reading the relay's output: %v (%q)", err, b)
	}
	return decodeFrame(p.t, b), true
}

func (p *inProc) until(id string) []e2eFrame {
	p.t.Helper()
	var got []e2eFrame
	for {
		f, ok := p.next()
		if !ok {
			p.t.Fatalf("output ended before the response to %s", id)
		}
		got = append(got, f)
		if f.isResponse() && string(f.ID) == id {
			return got
		}
	}
}

// finish closes the client's stdin and returns the rest of the output.
func (p *inProc) finish() []e2eFrame {
	p.t.Helper()
	p.in.Close()
	var rest []e2eFrame
	for {
		f, ok := p.next()
		if !ok {
			break
		}
		rest = append(rest, f)
	}
	if err := <-p.done; err != nil {
		p.t.Errorf("transport.Run: %v", err)
	}
	p.done <- nil // for Cleanup
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
			p.send(e2eInit, e2eNew)
			p.until("1")
			p.until("2")
			p.send(e2ePrompt(3, "sess-1"))
			var frames []e2eFrame
			for len(retryNotices(t, frames)) == 0 {
				f, ok := p.next()
				if !ok || f.isResponse() {
					t.Fatalf("no retry notice before %s", f.raw)
				}
				frames = append(frames, f)
			}
			armed := time.Now()
			p.send(lateChunk("sess-1"))
			time.Sleep(time.Until(armed.Add(offset)))
			p.send(e2eCancel("sess-1"))
			frames = append(frames, p.until("3")...)
			frames = append(frames, p.finish()...)
			resp := responsesTo(frames, "3")
			if len(resp) != 1 {
				t.Fatalf("responses to 3: got %d, want exactly 1", len(resp))
			}
			if resp[0].Error != nil {
				// The late frame reached the guard while it held the turn
				// (the usual order): the gate stops the recovery.
				if pe, _ := errorData(t, resp[0]); pe.Recovery.Reason != "late_activity" || pe.ReplaySafe {
					t.Fatalf("prompt answered %s, want a result or a late_activity stop", resp[0].raw)
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
	p.send(e2eInit, e2eNew)
	p.until("1")
	p.until("2")
	p.send(e2ePrompt(3, "sess-1"))
	var frames []e2eFrame
	for len(retryNotices(t, frames)) == 0 {
		f, ok := p.next()
		if !ok || f.isResponse() {
			t.Fatalf("no retry notice before %s", f.raw)
		}
		frames = append(frames, f)
	}
	dup := `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error","data":{"message":"stream disconnected before completion: late"}}}`
	p.send(`{"jsonrpc":"2.0","method":"test/echo","params":{"payload":"` + base64.StdEncoding.EncodeToString([]byte(dup)) + `"}}` + "\n")
	frames = append(frames, p.until("3")...)
	frames = append(frames, p.finish()...)
	resp := responsesTo(frames, "3")
	if len(resp) != 1 || resp[0].Error != nil || stopReason(t, resp[0]) != "end_turn" {
		t.Fatalf("responses to 3: got %d, first %s, want one end_turn", len(resp), resp[0].raw)
	}
	if n := len(retryNotices(t, frames)); n != 1 {
		t.Errorf("retry notices: got %d, want 1", n)
	}
}
