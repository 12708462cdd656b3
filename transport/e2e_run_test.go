package transport_test

import (
	"context"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/syncio"
	"github.com/acp-guard/acp-guard/transport"
)

// watchWriter collects what is written and closes seen once it holds want.
type watchWriter struct {
	syncio.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchWriter) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	if strings.Contains(w.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

// waitGoroutines waits until no more than n goroutines run, and reports
// the stacks if that does not happen. Goroutines end asynchronously after
// Run returns, so this polls; the deadline is only a guard.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, buf)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunNoGoroutineLeak runs the relay in this process around real
// agents and checks that every goroutine it started has ended once Run has
// returned and the client's stdin is closed.
func TestRunNoGoroutineLeak(t *testing.T) {
	for _, tt := range []struct {
		name      string
		argv      []string
		input     string
		keepStdin bool // stdin stays open until Run returns
		wantCode  int
		wantOut   string
	}{
		{name: "cat to EOF", argv: []string{"cat"}, input: "{\"a\":1}\r\n\nnot json\n", wantOut: "{\"a\":1}\r\n\nnot json\n"},
		{name: "agent exits with stdin open", argv: []string{"sh", "-c", "read -r x; exit 3"}, input: `{"jsonrpc":"2.0","id":1,"method":"m"}` + "\n",
			keepStdin: true, wantCode: 3, wantOut: `"id":1,"error"`},
		{name: "grandchild holds stdout", argv: []string{"sh", "-c", "sleep 300 & read -r x; exit 0"}, input: "{}\n", keepStdin: true},
		{name: "killed by signal", argv: []string{"sh", "-c", "read -r x; kill -KILL $$"}, input: "{}\n", keepStdin: true, wantCode: 137},
		{name: "not found", argv: []string{"/nonexistent/acp-agent"}, input: `{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n",
			wantCode: 127, wantOut: "could not be started"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			inR, inW := io.Pipe()
			var out, errOut syncio.Buffer
			// The feeder ends when its write is read and, unless the
			// test keeps stdin open, after closing it.
			go func() {
				_, _ = io.WriteString(inW, tt.input)
				if !tt.keepStdin {
					inW.Close()
				}
			}()
			res, err := transport.Run(context.Background(), transport.Options{
				Argv:   tt.argv,
				Grace:  2 * time.Second,
				Stdin:  inR,
				Stdout: &out,
				Stderr: &errOut,
			})
			inW.Close()
			if tt.wantCode == 127 {
				if err == nil {
					t.Errorf("got no error for a missing agent")
				}
			} else if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Exit.Code != tt.wantCode {
				t.Errorf("exit code %d, want %d", res.Exit.Code, tt.wantCode)
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("client got %q, want it to contain %q", out.String(), tt.wantOut)
			}
			waitGoroutines(t, base)
		})
	}
}

// TestRunCancelContext: cancelling Run's context sends the agent SIGTERM.
func TestRunCancelContext(t *testing.T) {
	base := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	defer inW.Close()
	stderr := &watchWriter{want: "ready", seen: make(chan struct{})}
	done := make(chan transport.Result, 1)
	// Run's goroutine: the test waits for it on done.
	go func() {
		res, _ := transport.Run(ctx, transport.Options{
			Argv:   []string{"sh", "-c", `trap 'echo got TERM >&2; exit 4' TERM; echo ready >&2; while :; do sleep 100 & wait $!; done`},
			Stdin:  inR,
			Stdout: io.Discard,
			Stderr: stderr,
		})
		done <- res
	}()
	<-stderr.seen // the trap is set
	cancel()
	res := <-done
	if res.Exit.Code != 4 || !strings.Contains(stderr.String(), "got TERM") {
		t.Errorf("exit %d, stderr %q; want 4 and the agent's TERM message", res.Exit.Code, stderr.String())
	}
	inW.Close()
	waitGoroutines(t, base)
}
