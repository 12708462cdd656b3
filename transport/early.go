package transport

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// Sessions that end before the agent runs: the agent could not be started
// (answerUnstarted), or acp-guard was told to stop first (answerStopped).
// Either way nothing will answer the client, so acp-guard answers every
// request the client has already sent, once, with an error saying why.

// startWindow is how long, after a start error, acp-guard keeps reading
// the client's input for requests to answer (a client sends initialize
// right after it spawned the proxy).
const startWindow = 300 * time.Millisecond

// stopRequested reports a stop signal already waiting when Run begins
// (one sent during flag parsing, configuration or catalogue loading), or a
// done ctx (SIGTERM). It never waits.
func stopRequested(ctx context.Context, sigs <-chan os.Signal) (platform.Signal, bool) {
	select {
	case s := <-sigs:
		if sig, ok := platform.AsSignal(s); ok {
			return sig, true
		}
	default:
	}
	if ctx.Err() != nil {
		return platform.SIGTERM, true
	}
	return 0, false
}

// answerStopped answers the requests the client already sent — every byte
// waiting on its input when the stop was decided, when the input can say
// how many (a pipe, a terminal, a socket) — without starting the agent.
func answerStopped(o Options, sig platform.Signal) Result {
	st := ExitStatus{Code: 128 + int(sig), Stopped: sig}
	answerRead(o, st, waitingInput(o.Stdin), false)
	return Result{Exit: st}
}

// answerUnstarted answers what the client sent until a short window after
// the start failed (at least everything already waiting).
func answerUnstarted(o Options, startErr error) Result {
	st := ExitStatus{Code: 127, StartErr: startErr}
	var se *StartError
	if errors.As(startErr, &se) {
		st.Code = se.ExitCode
	}
	answerRead(o, st, waitingInput(o.Stdin), true)
	return Result{Exit: st}
}

// readSoFar is a batch of the client's lines and how far the input had
// been read when it was cut.
type readSoFar struct {
	b      *batch
	read   int64 // bytes read from the input so far
	atLine bool  // the last byte read ended a line
}

// countingReader counts what its one reader read.
type countingReader struct {
	r      io.Reader
	n      int64
	atLine bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.n += int64(n)
		c.atLine = p[n-1] == '\n'
	}
	return n, err
}

// answerRead reads the client's input and answers each request with st's
// error. It stops once it has read the waiting bytes (waiting < 0:
// unknown) up to a line's end — or, with linger, not before the start
// window has passed; a line still incomplete when the window ends is not
// waited for. The reading goroutine is not waited for: it may block on a
// stdin that stays open, and the process exits under it.
func answerRead(o Options, st ExitStatus, waiting int64, linger bool) {
	out := &syncOutput{w: o.Stdout}
	cfg := Config{MaxLine: o.MaxLine, Logger: o.Logger, Redact: o.Redact, Tap: o.Tap}
	if st.StartErr != nil {
		// The hooks see a launch failure like any agent exit (a set-up
		// request gets its ProviderError, phase launch).
		cfg.Hooks = o.Hooks
	}
	r := NewRelay(cfg, out)
	r.AgentExited(st)
	if waiting == 0 && !linger {
		return
	}
	lines := make(chan readSoFar, 16)
	go func() { // not waited for (see above)
		cr := &countingReader{r: o.Stdin}
		lr := newLineReader(cr, o.MaxLine)
		for {
			b, err := lr.next()
			lines <- readSoFar{b: b, read: cr.n, atLine: cr.atLine}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	window := time.NewTimer(startWindow)
	defer window.Stop()
	windowOver := false
	var last readSoFar
	for {
		caughtUp := waiting >= 0 && last.read >= waiting
		if caughtUp && (windowOver || !linger && last.atLine) || waiting < 0 && windowOver {
			return
		}
		select {
		case got, ok := <-lines:
			if !ok {
				return
			}
			for _, ln := range got.b.lines {
				r.FromClient(ln)
			}
			got.b.release()
			last = got
		case <-window.C:
			windowOver = true
		}
	}
}

// waitingInput is how many bytes wait to be read on in, when in is a file
// that can say (a pipe, a terminal, a socket; for a regular file what is
// left of it); -1 otherwise (platform.Waiting).
func waitingInput(in io.Reader) int64 { return platform.Waiting(in) }
