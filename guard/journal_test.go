package guard_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// blockingLog holds every Append until released, reporting each record.
type blockingLog struct {
	got     chan policy.Record
	release chan struct{}
}

func (b *blockingLog) Append(r policy.Record) error {
	b.got <- r
	<-b.release
	return nil
}

// The relay never waits on a disk, and scheduled work waits for its
// record: while the attempt log's write of a scheduled retry hangs, other
// requests are still relayed and answered, and neither the retry notice
// nor the retry happens; once the write completes, the retry runs and
// answers the prompt.
func TestAttemptLogOffTheRelayLock(t *testing.T) {
	t.Parallel()
	doc := policy.Default()
	doc.Transient = policy.ClassPolicy{Retry: policy.Retry{Enabled: true, MaxRetries: 3, InitialIntervalSeconds: 1}, OnExhausted: policy.OutcomeStop}
	blog := &blockingLog{got: make(chan policy.Record, 16), release: make(chan struct{})}
	g := guard.New(guard.Config{Identity: observers.Identity{Command: "demo-agent"}, Engine: catalogue.Default(), Policy: doc, Attempts: blog})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), e2eWatchdog)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := transport.Run(ctx, transport.Options{Argv: demoArgv(t, "--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"),
			Grace: time.Second, Stdin: inR, Stdout: outW, Stderr: io.Discard, Hooks: g})
		outW.Close()
		done <- err
	}()
	out := bufio.NewReader(outR)
	p := &inProc{t: t, in: inW, out: out, done: done}
	p.send(e2eInit, e2eNew)
	p.until("1")
	p.until("2")
	p.send(e2ePrompt(3, "sess-1"))
	select {
	case r := <-blog.got:
		if r.Outcome != policy.AttemptScheduled {
			t.Fatalf("first record: %s, want scheduled", r.Outcome)
		}
	case <-ctx.Done():
		t.Fatal("no attempt record")
	}
	// The write hangs: the relay still works.
	p.send(e2eRequest(4, "session/new", `{"cwd":"/tmp","mcpServers":[]}`))
	frames := p.until("4")
	if n := len(retryNotices(t, frames)); n != 0 || len(responsesTo(frames, "3")) != 0 {
		t.Fatalf("before the record was written: %d notices, %d answers to 3; want none", n, len(responsesTo(frames, "3")))
	}
	close(blog.release)
	frames = p.until("3")
	if n := len(retryNotices(t, frames)); n != 1 {
		t.Errorf("retry notices after the write: got %d, want 1", n)
	}
	if sr := stopReason(t, frames[len(frames)-1]); sr != "end_turn" {
		t.Errorf("prompt 3: got %s, want end_turn", sr)
	}
	inW.Close()
	_, _ = io.Copy(io.Discard, outR)
	if err := <-done; err != nil {
		t.Errorf("transport.Run: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Error(err)
	}
	for r := range drain(blog.got) {
		if r.Outcome != policy.AttemptSucceeded {
			t.Errorf("later record: %s, want succeeded", r.Outcome)
		}
	}
}

func drain(c chan policy.Record) chan policy.Record {
	close(c)
	return c
}

// failingLog refuses every record.
type failingLog struct{ n int }

func (f *failingLog) Append(policy.Record) error { f.n++; return errors.New("disk on fire") }

// Offline (no event loop to report back to) the record is written in
// line: an unwritable log stops the recovery at once.
func TestStateUnwritableInLine(t *testing.T) {
	for _, tc := range []struct {
		name     string
		doc      policy.Document
		fallback []string
	}{
		{"retry", retryPolicy(), nil},
		{"switch", policy.Default(), []string{"model-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &harness{t: t, v: transport.NewVirtual(epoch)}
			flog := &failingLog{}
			g := guard.New(guard.Config{Identity: observers.Identity{Flag: "claude-agent-acp"}, Engine: catalogue.Default(), Policy: tc.doc,
				Fallback: tc.fallback, Attempts: flog, Events: guard.Turns(func(r guard.TurnReport) { h.reports = append(h.reports, r) })})
			h.r = transport.NewRelay(transport.Config{MaxLine: 1 << 20, Hooks: g}, h.v)
			h.start()
			h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
			got := h.clientFrames()
			if len(got) != 1 {
				t.Fatalf("client got %q", got)
			}
			_, _, pe, _ := providerError(t, got[0])
			if r := pe["recovery"].(map[string]any); r["reason"] != "state_unwritable" {
				t.Errorf("recovery %v", r)
			}
			h.v.Advance(time.Hour)
			for _, f := range h.agentFrames() {
				if strings.Contains(f, "acp-guard:") {
					t.Errorf("work dispatched without its record: %s", f)
				}
			}
		})
	}
}

// Late activity while the record of a scheduled retry is still being
// written stops the recovery at once; the record's completion then
// schedules nothing.
func TestLateActivityWhileRecordPending(t *testing.T) {
	t.Parallel()
	doc := policy.Default()
	doc.Transient = policy.ClassPolicy{Retry: policy.Retry{Enabled: true, MaxRetries: 3, InitialIntervalSeconds: 1}, OnExhausted: policy.OutcomeStop}
	blog := &blockingLog{got: make(chan policy.Record, 16), release: make(chan struct{})}
	g := guard.New(guard.Config{Identity: observers.Identity{Command: "demo-agent"}, Engine: catalogue.Default(), Policy: doc, Attempts: blog})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), e2eWatchdog)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := transport.Run(ctx, transport.Options{Argv: demoArgv(t, "--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"),
			Grace: time.Second, Stdin: inR, Stdout: outW, Stderr: io.Discard, Hooks: g})
		outW.Close()
		done <- err
	}()
	p := &inProc{t: t, in: inW, out: bufio.NewReader(outR), done: done}
	p.send(e2eInit, e2eNew)
	p.until("1")
	p.until("2")
	p.send(e2ePrompt(3, "sess-1"))
	if r := <-blog.got; r.Outcome != policy.AttemptScheduled {
		t.Fatalf("first record: %s, want scheduled", r.Outcome)
	}
	p.send(lateChunk("sess-1"))
	frames := p.until("3")
	pe, _ := errorData(t, frames[len(frames)-1])
	if pe.Recovery.Reason != "late_activity" || pe.ReplaySafe || !pe.Evidence.AssistantOutput {
		t.Errorf("providerError: recovery %+v replaySafe %v evidence %+v, want late_activity with assistant output", pe.Recovery, pe.ReplaySafe, pe.Evidence)
	}
	close(blog.release)
	// The stop's own record follows; then nothing more is scheduled.
	if r := <-blog.got; r.Outcome != policy.AttemptStopped || r.Decision.Reason != "late_activity" {
		t.Errorf("second record: %s/%s, want stopped/late_activity", r.Outcome, r.Decision.Reason)
	}
	inW.Close()
	rest := p.finishRest()
	if n := len(retryNotices(t, append(frames, rest...))); n != 0 {
		t.Errorf("retry notices: got %d, want none", n)
	}
	if len(responsesTo(rest, "3")) != 0 {
		t.Error("prompt 3 answered twice")
	}
	if err := <-done; err != nil {
		t.Errorf("transport.Run: %v", err)
	}
	g.Close()
}

// finishRest reads the rest of the output after stdin was closed.
func (p *inProc) finishRest() []e2eFrame {
	var rest []e2eFrame
	for {
		f, ok := p.next()
		if !ok {
			return rest
		}
		rest = append(rest, f)
	}
}
