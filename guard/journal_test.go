package guard_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/internal/acptest"
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
	p := relayInProc(t, g, "--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp")
	p.Send(acptest.Initialize(1), acptest.SessionNew(2))
	p.Until("1")
	p.Until("2")
	p.Send(acptest.Prompt(3, "sess-1"))
	select {
	case r := <-blog.got:
		if r.Outcome != policy.AttemptScheduled {
			t.Fatalf("first record: %s, want scheduled", r.Outcome)
		}
	case <-time.After(acptest.DefaultWatchdog): // a guard against a hang, not an assertion
		t.Fatal("no attempt record")
	}
	// The write hangs: the relay still works.
	p.Send(acptest.Request(4, "session/new", `{"cwd":"/tmp","mcpServers":[]}`))
	frames := p.Until("4")
	if n := len(retryNotices(t, frames)); n != 0 || len(acptest.ResponsesTo(frames, "3")) != 0 {
		t.Fatalf("before the record was written: %d notices, %d answers to 3; want none", n, len(acptest.ResponsesTo(frames, "3")))
	}
	close(blog.release)
	frames = p.Until("3")
	if n := len(retryNotices(t, frames)); n != 1 {
		t.Errorf("retry notices after the write: got %d, want 1", n)
	}
	if sr := stopReason(t, frames[len(frames)-1]); sr != "end_turn" {
		t.Errorf("prompt 3: got %s, want end_turn", sr)
	}
	finishInProc(t, p)
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
	p := relayInProc(t, g, "--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp")
	p.Send(acptest.Initialize(1), acptest.SessionNew(2))
	p.Until("1")
	p.Until("2")
	p.Send(acptest.Prompt(3, "sess-1"))
	if r := <-blog.got; r.Outcome != policy.AttemptScheduled {
		t.Fatalf("first record: %s, want scheduled", r.Outcome)
	}
	p.Send(lateChunk("sess-1"))
	frames := p.Until("3")
	pe, _ := errorData(t, frames[len(frames)-1])
	if pe.Recovery.Reason != "late_activity" || pe.ReplaySafe || !pe.Evidence.AssistantOutput {
		t.Errorf("providerError: recovery %+v replaySafe %v evidence %+v, want late_activity with assistant output", pe.Recovery, pe.ReplaySafe, pe.Evidence)
	}
	close(blog.release)
	// The stop's own record follows; then nothing more is scheduled.
	if r := <-blog.got; r.Outcome != policy.AttemptStopped || r.Decision.Reason != "late_activity" {
		t.Errorf("second record: %s/%s, want stopped/late_activity", r.Outcome, r.Decision.Reason)
	}
	rest := finishInProc(t, p)
	if n := len(retryNotices(t, append(frames, rest...))); n != 0 {
		t.Errorf("retry notices: got %d, want none", n)
	}
	if len(acptest.ResponsesTo(rest, "3")) != 0 {
		t.Error("prompt 3 answered twice")
	}
	g.Close()
}
