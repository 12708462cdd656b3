package acptest

import (
	"context"
	"io"
	"testing"
)

// Piped is a Conn to a server running in this process over in-memory
// pipes — transport.Run with a guard, the demo agent's Run — so that the
// race detector sees both sides.
type Piped struct {
	*Conn
	done chan struct{}
	err  error
}

// Pipe runs serve on its own goroutine with the other ends of a Conn's
// pipes; serve's stdout closes when it returns (the client's EOF). Its ctx
// ends after Options.Watchdog (default DefaultWatchdog: a guard against
// hangs) or at the end of the test, when the client's stdin is closed;
// the cleanup then drains stdout and waits for serve.
func Pipe(t testing.TB, o Options, serve func(ctx context.Context, stdin io.Reader, stdout io.Writer) error) *Piped {
	t.Helper()
	if o.Watchdog <= 0 {
		o.Watchdog = DefaultWatchdog
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), o.Watchdog)
	p := &Piped{Conn: newConn(t, inW, outR, o), done: make(chan struct{})}
	// The server's goroutine: it ends when serve returns.
	go func() {
		p.err = serve(ctx, inR, outW)
		outW.Close()
		inR.CloseWithError(io.ErrClosedPipe) // the client's later writes fail, never block
		close(p.done)
	}()
	t.Cleanup(func() {
		p.CloseStdin()
		cancel()
		_, _ = io.Copy(io.Discard, outR)
		<-p.done
	})
	return p
}

// Done is closed when serve has returned.
func (p *Piped) Done() <-chan struct{} { return p.done }

// Err waits for serve to return and returns its error.
func (p *Piped) Err() error {
	<-p.done
	return p.err
}

// Finish closes stdin, reads stdout to its end and waits for serve: the
// remaining frames and serve's error.
func (p *Piped) Finish() ([]Frame, error) {
	p.t.Helper()
	p.CloseStdin()
	rest := p.Rest()
	return rest, p.Err()
}
