package guard_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// Cursor's constant diagnostic for a projected control chunk.
const cursorDiagnostic = "Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)"

// promptTurn opens a session, sends prompt id 3 and returns the frames up
// to its response; then it closes stdin and checks that nothing else
// answered the prompt.
func promptTurn(t *testing.T, p *acptest.Proc) []acptest.Frame {
	t.Helper()
	_, sid := p.Open()
	p.Send(acptest.Prompt(3, sid))
	frames := p.Until("3")
	rest, _ := p.Finish()
	if n := len(acptest.ResponsesTo(rest, "3")); n != 0 {
		t.Errorf("prompt 3 answered %d more times after its response: %s", n, rest[0].Raw)
	}
	return frames
}

// directTurn runs the demo agent without the proxy and returns the bytes
// of the prompt turn (every frame after session/new's response).
func directTurn(t *testing.T, agentArgs ...string) []byte {
	t.Helper()
	return turnBytes(promptTurn(t, startArgv(t, acptest.DemoAgent(t, agentArgs...)...)))
}

func turnBytes(frames []acptest.Frame) []byte {
	var b bytes.Buffer
	for _, f := range frames {
		b.Write(f.Raw)
	}
	return b.Bytes()
}

// checkCursorRewrite checks the client saw no control chunk and exactly one
// error for the prompt, Cursor's projection, and returns its ProviderError.
func checkCursorRewrite(t *testing.T, frames []acptest.Frame) e2ePE {
	t.Helper()
	for _, f := range frames {
		if bytes.Contains(f.Raw, []byte("RetriableError")) && f.Method != "" {
			t.Errorf("control chunk reached the client: %s", f.Raw)
		}
	}
	resp := acptest.ResponsesTo(frames, "3")
	if len(resp) != 1 {
		t.Fatalf("responses to 3: got %d, want 1", len(resp))
	}
	r := resp[0]
	if r.Error == nil {
		t.Fatalf("prompt answered %s, want an error", r.Raw)
	}
	if r.Error.Code != -32603 || r.Error.Message != cursorDiagnostic {
		t.Errorf("error: got %d %q, want -32603 %q", r.Error.Code, r.Error.Message, cursorDiagnostic)
	}
	pe, _ := errorData(t, r)
	for _, c := range []struct{ field, got, want string }{
		{"schema", pe.Schema, "acp-guard.provider-error/1"},
		{"code", pe.Code, "agent_transport_lost"},
		{"class", pe.Class, "transient"},
		{"confidence", pe.Confidence, "high"},
		{"rule", pe.Rule, "cursor.retriable_stream_reset.v1"},
		{"source", pe.Source, "cursor_acp"},
		{"providerId", pe.ProviderID, "cursor-acp"},
		{"sessionId", pe.SessionID, "sess-1"},
		{"recovery.action", pe.Recovery.Action, "stop"},
	} {
		if c.got != c.want {
			t.Errorf("providerError.%s: got %q, want %q", c.field, c.got, c.want)
		}
	}
	at, err := time.Parse(time.RFC3339Nano, pe.OccurredAt)
	if err != nil || !strings.HasSuffix(pe.OccurredAt, "Z") || at.Location() != time.UTC {
		t.Errorf("occurredAt: got %q (%v), want an RFC 3339 UTC time", pe.OccurredAt, err)
	}
	return pe
}

func TestE2ECursorProjection(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		flags     []string
		args      []string
		replay    bool // want replaySafe
		thoughts  bool
		tools     bool
		excerpt   string
		forwarded []string // updates the client must still see
	}{
		{name: "retriable", args: []string{"--scenario", "cursor-retriable"}, replay: true, excerpt: "[unavailable] PING timed out"},
		{name: "stalled", args: []string{"--scenario", "cursor-stalled"}, replay: true, excerpt: "Connection stalled"},
		{name: "incident", args: []string{"--scenario", "cursor-incident"}, thoughts: true, tools: true,
			excerpt: "[unavailable] PING timed out", forwarded: []string{"agent_thought_chunk", "tool_call"}},
		{name: "adapter flag overrides agentInfo", flags: []string{"--adapter", "cursor-acp"},
			args: []string{"--scenario", "cursor-retriable", "--agent-name", "codex-acp"}, replay: true, excerpt: "[unavailable] PING timed out"},
		{name: "cursor-acp agent name", args: []string{"--scenario", "cursor-retriable", "--agent-name", "cursor-acp"},
			replay: true, excerpt: "[unavailable] PING timed out"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			frames := promptTurn(t, startProxy(t, tt.flags, tt.args...))
			pe := checkCursorRewrite(t, frames)
			if pe.ReplaySafe != tt.replay {
				t.Errorf("replaySafe: got %v, want %v", pe.ReplaySafe, tt.replay)
			}
			if pe.Evidence.Thoughts != tt.thoughts || pe.Evidence.ToolActivity != tt.tools || pe.Evidence.AssistantOutput {
				t.Errorf("evidence: got %+v, want thoughts %v, toolActivity %v, no assistant output", pe.Evidence, tt.thoughts, tt.tools)
			}
			var kinds []string
			for _, f := range frames {
				if u, ok := updateOf(t, f); ok {
					kinds = append(kinds, u.SessionUpdate)
				}
			}
			if strings.Join(kinds, ",") != strings.Join(tt.forwarded, ",") {
				t.Errorf("updates forwarded: got %v, want %v", kinds, tt.forwarded)
			}
		})
	}
}

// Turns the projection must not touch reach the client byte for byte as the
// agent wrote them. A resumed turn loses only the (suppressed) control
// chunk: the later text and end_turn are the agent's bytes.
func TestE2ECursorUntouched(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		flags      []string
		args       []string
		suppressed bool // the control chunk is dropped, the rest kept
	}{
		{"resumed", nil, []string{"--scenario", "cursor-resumed"}, true},
		{"other adapter's agent", nil, []string{"--scenario", "cursor-retriable", "--agent-name", "codex-acp"}, false},
		{"other adapter flag", []string{"--adapter", "claude-agent-acp"}, []string{"--scenario", "cursor-retriable"}, false},
		{"prose before the prefix", nil, []string{"--scenario", "cursor-retriable", "--text", "Note: Error: RetriableError: boom"}, false},
		{"empty suffix", nil, []string{"--scenario", "cursor-retriable", "--text", "Error: RetriableError:   "}, false},
		{"over-long suffix", nil, []string{"--scenario", "cursor-retriable", "--text", "Error: RetriableError: " + strings.Repeat("x", 257)}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := directTurn(t, tt.args...)
			if !bytes.Contains(want, []byte("RetriableError")) || !bytes.Contains(want, []byte(`"stopReason":"end_turn"`)) {
				t.Fatalf("the demo agent's turn lacks the control chunk or end_turn:\n%s", want)
			}
			if tt.suppressed {
				var kept []byte
				for _, ln := range bytes.SplitAfter(want, []byte("\n")) {
					if !bytes.Contains(ln, []byte("RetriableError")) {
						kept = append(kept, ln...)
					}
				}
				want = kept
			}
			got := turnBytes(promptTurn(t, startProxy(t, tt.flags, tt.args...)))
			if !bytes.Equal(got, want) {
				t.Errorf("through acp-guard:\n%s\nwant the agent's bytes:\n%s", got, want)
			}
		})
	}
}

// shCursorAgent is a cursor-like agent in sh: it answers the prompt by
// printing the control chunk and the end_turn response in one printf.
const shCursorAgent = `while IFS= read -r line; do
  case "$line" in
  *'"initialize"'*) printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"cursor-agent","version":"1"}}}' ;;
  *'"session/new"'*) printf '%s\n' '{"jsonrpc":"2.0","id":2,"result":{"sessionId":"sess-1"}}' ;;
  *'"session/prompt"'*) printf '%s\n%s\n' '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Error: RetriableError: [unavailable] PING timed out"}}}}' '{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}' ;;
  esac
done`

// Frames that arrive in the same read as the prompt response are observed
// before it: the control chunk written in the same write as end_turn still
// turns the turn into the error.
func TestE2ESameReadOrdering(t *testing.T) {
	t.Parallel()
	t.Run("demo agent back to back", func(t *testing.T) {
		t.Parallel()
		// The demo agent writes the chunk and the response back to back
		// with no pause; run several turns so some share a read.
		p := startProxy(t, nil, "--scenario", "cursor-retriable")
		_, sid := p.Open()
		for id := 3; id < 13; id++ {
			p.Send(acptest.Prompt(id, sid))
			frames := p.Until(strconv.Itoa(id))
			resp := frames[len(frames)-1]
			if resp.Error == nil || resp.Error.Message != cursorDiagnostic || len(frames) != 1 {
				t.Fatalf("prompt %d: got %d frames ending in %s, want only the rewritten error", id, len(frames), resp.Raw)
			}
		}
	})
	t.Run("sh printf one write", func(t *testing.T) {
		t.Parallel()
		frames := promptTurn(t, startArgv(t, acptest.GuardArgv(t, nil, "sh", "-c", shCursorAgent)...))
		pe := checkCursorRewrite(t, frames)
		if !pe.ReplaySafe {
			t.Errorf("replaySafe: got false, want true")
		}
	})
}
