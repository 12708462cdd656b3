package transport_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/internal/syncio"
	"github.com/acp-guard/acp-guard/transport"
)

// pipeAgent is an agent in this process on io.Pipes: it answers each
// request line with {"id":…,"result":{}} until its input ends or stop is
// closed, then exits with code.
type pipeAgent struct {
	stdinR  *io.PipeReader
	stdinW  *io.PipeWriter
	stdoutR *io.PipeReader
	stdoutW *io.PipeWriter
	done    chan struct{}
	code    int
	stop    chan struct{}
}

func startPipeAgent(code int) *pipeAgent {
	a := &pipeAgent{done: make(chan struct{}), code: code, stop: make(chan struct{})}
	a.stdinR, a.stdinW = io.Pipe()
	a.stdoutR, a.stdoutW = io.Pipe()
	lines := make(chan string)
	// The line reader ends at the agent's stdin EOF.
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(a.stdinR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// The agent ends at its stdin's EOF or at stop; the test waits on done.
	go func() {
		defer close(a.done)
		defer a.stdoutW.Close()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					return
				}
				id := l[strings.Index(l, `"id":`)+5 : strings.Index(l, `,"method"`)]
				_, _ = io.WriteString(a.stdoutW, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`+"\n")
			case <-a.stop:
				a.stdinR.CloseWithError(io.ErrClosedPipe)
				return
			}
		}
	}()
	return a
}

func (a *pipeAgent) pipes(withWait bool) *transport.AgentPipes {
	p := &transport.AgentPipes{Stdin: a.stdinW, Stdout: a.stdoutR, Name: "pipe-agent"}
	if withWait {
		p.Wait = func() transport.ExitStatus { <-a.done; return transport.ExitStatus{Code: a.code} }
	}
	return p
}

// The caller's agent on pipes: frames pass both ways, the client's EOF
// closes the agent's input, and the session ends with the agent's exit
// (its Wait, or the end of its stdout without one).
func TestRunAgentPipes(t *testing.T) {
	for _, tt := range []struct {
		name     string
		wait     bool
		wantCode int
	}{
		{"with wait", true, 3},
		{"stdout EOF is the exit", false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := startPipeAgent(3)
			var out syncio.Buffer
			in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"session/new"}` + "\n")
			res, err := transport.Run(context.Background(), transport.Options{Agent: a.pipes(tt.wait), Stdin: in, Stdout: &out})
			if err != nil {
				t.Fatal(err)
			}
			if res.Exit.Code != tt.wantCode {
				t.Errorf("exit %+v, want code %d", res.Exit, tt.wantCode)
			}
			want := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":2,"result":{}}` + "\n"
			if out.String() != want {
				t.Errorf("client got %q, want %q", out.String(), want)
			}
		})
	}
}

// A stop (the context ends) reaches the caller's agent through its
// Signal, and a request it never answers gets its one error answer.
func TestRunAgentPipesSignal(t *testing.T) {
	a := startPipeAgent(0)
	p := a.pipes(true)
	var got []os.Signal
	p.Signal = func(s os.Signal) error {
		got = append(got, s) // called under the loop's lock, one at a time
		if s == platform.SIGTERM {
			select {
			case <-a.stop:
			default:
				close(a.stop)
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	defer inW.Close()
	out := &watchWriter{want: `"id":1`, seen: make(chan struct{})}
	go func() { // ends once the answer to 1 was written and the context cancelled
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize"}`+"\n")
		<-out.seen
		cancel()
	}()
	res, err := transport.Run(ctx, transport.Options{Agent: p, Stdin: inR, Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0] != platform.SIGTERM {
		t.Errorf("signals delivered %v, want SIGTERM first", got)
	}
	if res.Exit.Code != 0 || !strings.Contains(out.String(), `"id":1,"result"`) {
		t.Errorf("exit %+v, client got %q", res.Exit, out.String())
	}
}

// Pipes without stdin or stdout are refused, and a request already sent
// is answered.
func TestRunAgentPipesIncomplete(t *testing.T) {
	var out syncio.Buffer
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n")
	_, err := transport.Run(context.Background(), transport.Options{Agent: &transport.AgentPipes{}, Stdin: in, Stdout: &out})
	if err == nil {
		t.Fatal("Run accepted pipes without stdin and stdout")
	}
	if !strings.Contains(out.String(), `"id":1,"error"`) {
		t.Errorf("client got %q, want an error answer to 1", out.String())
	}
}
