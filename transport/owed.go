package transport

import (
	"io"
	"math"
	"sync/atomic"
	"time"
)

// The requests owed at the end. When the agent's end ends the session (it
// exited, or a signal stopped both), requests the client had already sent
// may still wait on the client's input, or in the client reader's hands,
// unread by the loop. Each is still answered once (Relay.FromClient
// answers at once after the exit): stop waits, within the grace period,
// until the client reader has handed over every complete line of what
// had been sent when the session ended (readOwed).

// clientInput is the client's input as its one reader sees it: how many
// bytes it has read, and how far every complete line has been handled —
// which is all it has read whenever it calls Read again, since lineReader
// hands a read's lines over before it reads again (an incomplete line
// waits in its carry, and is no request yet).
type clientInput struct {
	r       io.Reader
	read    atomic.Int64  // bytes read from r
	handled atomic.Int64  // every complete line before this offset is handled
	moved   chan struct{} // poked whenever handled moves; one slot
}

func newClientInput(r io.Reader) *clientInput {
	return &clientInput{r: r, moved: make(chan struct{}, 1)}
}

func (c *clientInput) Read(p []byte) (int, error) {
	c.handledTo(c.read.Load())
	n, err := c.r.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// ended: the reader has returned, its last lines handled.
func (c *clientInput) ended() { c.handledTo(math.MaxInt64) }

func (c *clientInput) handledTo(n int64) {
	c.handled.Store(n)
	select {
	case c.moved <- struct{}{}:
	default:
	}
}

// readOwed lets the client reader hand over, within limit, every complete
// line the client had sent: what it has read and what waits on the input
// (when the input can say; the target is measured once more when reached,
// for a read that was returning as it was first measured). Called without the
// loop's lock, which the reader's events need.
func (l *loop) readOwed(limit time.Duration) {
	in := l.in
	target := func() int64 { return in.read.Load() + max(waitingInput(l.o.Stdin), 0) }
	want, measured := target(), 1
	var deadline <-chan time.Time
	for {
		if in.handled.Load() >= want {
			if measured == 2 {
				return
			}
			want, measured = max(want, target()), 2
			continue
		}
		if deadline == nil {
			t := time.NewTimer(limit)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-in.moved:
		case <-deadline:
			l.log.Warn("the client's last requests were not read within the grace period; they go unanswered", "read", in.read.Load(), "sent", want)
			return
		}
	}
}
