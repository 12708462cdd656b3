package suite

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/syncio"
	"github.com/acp-guard/acp-guard/internal/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// startDemo starts argv (acp-guard arguments) with a private state dir and
// returns an initialized client with one session.
func startDemo(t *testing.T, args ...string) (*Client, string) {
	t.Helper()
	bin := testbin.Path(t)
	dir := t.TempDir()
	argv := append([]string{bin}, args...)
	for i, a := range argv {
		if a == "ACPG" {
			argv[i] = bin
		}
	}
	stderr := &syncio.Buffer{}
	c, err := Start(Options{Argv: argv, Env: append(os.Environ(), "XDG_STATE_HOME="+dir), Dir: dir, Stderr: stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Kill()
		if t.Failed() {
			t.Logf("stderr of %v:\n%s", argv, stderr.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	sid, _, err := c.NewSession(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	return c, sid
}

func writePolicy(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const retryPolicy = `{"version":1,
 "transient":{"retry":{"enabled":true,"max_retries":2,"initial_interval_seconds":1},
              "wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
 "hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},
         "wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`

func TestClientTurns(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStop   string
		wantText   bool
		wantKinds  []string // a subsequence of the turn's kinds
		wantClass  string   // providerError.class of a failed turn
		wantNotice int
	}{
		{name: "success", args: []string{"demo-agent"},
			wantStop: "end_turn", wantText: true, wantKinds: []string{"agent_thought_chunk", "agent_message_chunk"}},
		{name: "agent requests answered", args: []string{"demo-agent", "--scenario", "effects"},
			wantStop: "end_turn", wantText: true},
		{name: "annotated error", args: []string{"--", "ACPG", "demo-agent", "--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"},
			wantClass: "transient"},
		{name: "retried", args: []string{"--policy", "POLICY", "--", "ACPG", "demo-agent", "--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp"},
			wantStop: "end_turn", wantText: true, wantKinds: []string{"acp-guard-notice", "agent_message_chunk"}, wantNotice: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := slices.Clone(tt.args)
			for i, a := range args {
				if a == "POLICY" {
					args[i] = writePolicy(t, retryPolicy)
				}
			}
			c, sid := startDemo(t, args...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			turn, err := c.Prompt(ctx, sid, "hello")
			if err != nil {
				t.Fatal(err)
			}
			if got := turn.StopReason(); got != tt.wantStop {
				t.Errorf("stopReason: got %q, want %q (response %s)", got, tt.wantStop, turn.Response.Raw)
			}
			if got := turn.Text() != ""; got != tt.wantText {
				t.Errorf("has text: got %v, want %v (%q)", got, tt.wantText, turn.Text())
			}
			if !isSubsequence(tt.wantKinds, turn.Kinds()) {
				t.Errorf("kinds: got %v, want a subsequence %v", turn.Kinds(), tt.wantKinds)
			}
			if turn.Responses != 1 {
				t.Errorf("responses to the prompt: got %d, want 1", turn.Responses)
			}
			pe := turn.ProviderError()
			switch {
			case tt.wantClass == "" && pe != nil:
				t.Errorf("providerError: got %+v, want none", pe)
			case tt.wantClass != "" && pe == nil:
				t.Errorf("providerError: got none, want class %s (response %s)", tt.wantClass, turn.Response.Raw)
			case pe != nil && pe.Class != tt.wantClass:
				t.Errorf("providerError.class: got %s, want %s", pe.Class, tt.wantClass)
			}
			n := turn.Notices()
			if len(n) != tt.wantNotice {
				t.Fatalf("notices: got %d, want %d", len(n), tt.wantNotice)
			}
			if len(n) > 0 && (n[0].Attempt != 1 || n[0].Class != "transient" || n[0].Action != "retry") {
				t.Errorf("notice: got %+v, want attempt 1, class transient, action retry", n[0])
			}
		})
	}
}

func TestClientCancelAndDisconnect(t *testing.T) {
	c, sid := startDemo(t, "--grace", "100ms", "--", "ACPG", "demo-agent", "--scenario", "hang")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := c.StartPrompt(sid, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(sid); err != nil {
		t.Fatal(err)
	}
	turn, err := c.Finish(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := turn.StopReason(); got != "cancelled" {
		t.Errorf("stopReason: got %q, want cancelled", got)
	}
	if !c.Stop(ctx) {
		t.Errorf("acp-guard did not exit after stdin closed")
	}
	if _, _, err := c.WaitFor(ctx, 0, func(Frame) bool { return false }); err != ErrExited {
		t.Errorf("WaitFor after exit: got %v, want ErrExited", err)
	}
}

func TestIsSubsequence(t *testing.T) {
	tests := []struct {
		sub, seq []string
		want     bool
	}{
		{nil, []string{"a"}, true},
		{[]string{"a", "c"}, []string{"a", "b", "c"}, true},
		{[]string{"c", "a"}, []string{"a", "b", "c"}, false},
		{[]string{"a"}, nil, false},
	}
	for _, tt := range tests {
		if got := isSubsequence(tt.sub, tt.seq); got != tt.want {
			t.Errorf("isSubsequence(%v, %v): got %v, want %v", tt.sub, tt.seq, got, tt.want)
		}
	}
}

func TestShape(t *testing.T) {
	got := Shape([]string{"available_commands_update", "agent_thought_chunk", "agent_message_chunk", "agent_message_chunk", "usage_update", "agent_message_chunk"})
	want := []string{"agent_thought_chunk", "agent_message_chunk"}
	if !slices.Equal(got, want) {
		t.Errorf("Shape: got %v, want %v", got, want)
	}
}
