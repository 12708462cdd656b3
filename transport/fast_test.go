package transport_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/transport"
)

// orderHooks checks the fast path's promises from the hooks' side: every
// agent frame is observed once, in the order the agent wrote it, and what
// the proxy writes of its own (a marker, from a client event or a timer)
// names how many agent frames the hooks had observed by then. The client
// side checks that exactly those frames reached it before the marker: a
// frame written on the fast path never overtakes, and is never overtaken
// by, an event's output it was linearized against.
type orderHooks struct {
	transport.NopHooks
	seen   int // agent frames observed
	passed int // PassThrough answers true (a batch refused later in its lines counts too)
	bad    []string
	slowAt int // every slowAt-th frame is refused the fast path
}

func (h *orderHooks) PassThrough(m *transport.Msg) bool {
	var p struct{ N int }
	_ = json.Unmarshal(m.Params, &p)
	if h.slowAt > 0 && p.N%h.slowAt == 0 {
		return false
	}
	h.passed++
	return true
}

func (h *orderHooks) AgentMsg(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	var p struct{ N int }
	if err := json.Unmarshal(m.Params, &p); err != nil || p.N != h.seen+1 {
		h.bad = append(h.bad, fmt.Sprintf("observed %s after %d frames", m.Line, h.seen))
	}
	h.seen++
	if h.seen%97 == 0 {
		c.After(0, func() { c.ToClient(marker(h.seen)) })
	}
	return transport.Forward
}

func (h *orderHooks) ClientMsg(c transport.Ctl, m *transport.Msg, req *transport.Request) transport.Verdict {
	if m.Kind == transport.KindRequest {
		c.Reply(req, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"seen":%d}}`+"\n", m.ID, h.seen)))
		return transport.Drop
	}
	return transport.Forward
}

func marker(seen int) []byte {
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"test/marker","params":{"seen":%d}}`+"\n", seen))
}

func TestFastPathOrder(t *testing.T) {
	for _, tt := range []struct {
		name   string
		slowAt int
	}{
		{"all fast", 0},
		{"some slow", 7},
	} {
		t.Run(tt.name, func(t *testing.T) { fastPathOrder(t, tt.slowAt) })
	}
}

func fastPathOrder(t *testing.T, slowAt int) {
	const frames = 20000
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	// The agent writes notifications and requests, numbered, in small
	// bursts; it exits when its input ends (the test waits on Run).
	go func() {
		defer stdoutW.Close()
		for n := 1; n <= frames; n++ {
			line := fmt.Sprintf(`{"jsonrpc":"2.0","method":"test/note","params":{"n":%d}}`+"\n", n)
			if n%5 == 0 {
				line = fmt.Sprintf(`{"jsonrpc":"2.0","id":"a%d","method":"fs/read_text_file","params":{"n":%d}}`+"\n", n, n)
			}
			if _, err := io.WriteString(stdoutW, line); err != nil {
				return
			}
			if n%50 == 0 {
				time.Sleep(time.Microsecond)
			}
		}
		_, _ = io.Copy(io.Discard, stdinR)
	}()
	clientR, clientW := io.Pipe()
	outR, outW := io.Pipe()
	// The client asks while the agent streams; its input ends once it has
	// read every agent frame.
	done := make(chan []string)
	go func() {
		var problems []string
		got, asked := 0, 0
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			line := sc.Text()
			var f struct {
				ID     json.RawMessage
				Method string
				Params struct{ N, Seen int }
				Result struct{ Seen int }
			}
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				problems = append(problems, "not JSON: "+line)
				continue
			}
			switch {
			case f.Method == "test/marker":
				if f.Params.Seen != got {
					problems = append(problems, fmt.Sprintf("marker after %d agent frames names %d", got, f.Params.Seen))
				}
			case f.Method != "":
				got++
				if f.Params.N != got {
					problems = append(problems, fmt.Sprintf("agent frame %d arrived as the %dth", f.Params.N, got))
				}
			default:
				if f.Result.Seen != got {
					problems = append(problems, fmt.Sprintf("answer after %d agent frames names %d", got, f.Result.Seen))
				}
			}
			if got%300 == 0 && asked < got/300 {
				asked++
				fmt.Fprintf(clientW, `{"jsonrpc":"2.0","id":%d,"method":"test/ask"}`+"\n", asked)
			}
			if got == frames && !strings.Contains(line, "result") {
				clientW.Close()
			}
		}
		done <- problems
	}()
	h := &orderHooks{slowAt: slowAt}
	res, err := transport.Run(context.Background(), transport.Options{
		Agent:  &transport.AgentPipes{Stdin: stdinW, Stdout: stdoutR},
		Stdin:  clientR,
		Stdout: outW,
		Hooks:  h,
	})
	outW.Close()
	problems := <-done
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(h.bad, problems...) {
		t.Error(p)
	}
	if h.seen != frames {
		t.Errorf("hooks observed %d agent frames, want %d", h.seen, frames)
	}
	if res.Counts.AgentFrames != frames || res.Counts.PassMisjudged != 0 {
		t.Errorf("counts %+v", res.Counts)
	}
	if res.Counts.Passed == 0 || res.Counts.Passed > uint64(h.passed) {
		t.Errorf("fast path wrote %d frames, PassThrough accepted %d", res.Counts.Passed, h.passed)
	}
	t.Logf("%d of %d agent frames on the fast path", res.Counts.Passed, frames)
}
