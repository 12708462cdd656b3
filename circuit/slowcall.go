package circuit

import (
	"context"
	"sync"
	"time"
)

// slowCall is call on a Pinger. The call runs on its own goroutine under
// a deadline of slowBudget; slowCall waits for it in
// every branch. At each timeout without an answer the store is pinged
// (within timeout, on a goroutine slowCall also waits for before
// returning): a ping that fails — not connected, or no round trip: a
// connection that stalled — ends the call at once as a failure (the
// store is down, and the session decides alone as for any store
// failure); a ping that answers means the store is there but late, and
// the call goes on (logged "circuit store slow" once per slow spell).
// A call ended so ends as one that timed out (context.DeadlineExceeded:
// the store reads a swap's outcome back). A late call that answers feeds its latency to the estimate, so the
// next calls' timeout follows the slow store.
func (c *Circuits) slowCall(ctx context.Context, p Pinger, timeout time.Duration, fn func(context.Context) error) error {
	hard, cancelHard := context.WithTimeout(ctx, c.slowBudget(timeout))
	defer cancelHard()
	ctx, expire := expiring(hard)
	defer expire()
	start := c.clock()
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	tick, stop := c.after(timeout)
	var pinged chan error // the ping in flight (nil: none)
	late := false         // the store answered a ping while this call waited
	for {
		select {
		case err := <-done:
			stop()
			if pinged != nil {
				expire()
				<-pinged
			}
			c.answered(err, c.clock().Sub(start))
			if err == nil && !late {
				c.slowOver() // answered within its timeout: the slow spell is over
			}
			return err
		case <-tick:
			tick = nil
			pinged = make(chan error, 1)
			go func() {
				pctx, pcancel := context.WithTimeout(ctx, timeout)
				defer pcancel()
				pinged <- p.Ping(pctx)
			}()
		case err := <-pinged:
			pinged = nil
			if err != nil || ctx.Err() != nil {
				expire()
				return <-done // the store does not answer even a ping: a failure, as before
			}
			late = true
			c.slowSeen(c.clock().Sub(start))
			tick, stop = c.after(timeout)
		}
	}
}

// slowBudget is how long a call on a Pinger may be waited for in all:
// four of its timeouts (8 s at the 2 s floor; the timeout follows the
// measured latency, so a store found slow is given longer), at most
// MaxOpTimeout. A server that answers pings while its stream cannot
// answer at all (no quorum) thus holds a turn at most that long before
// the session decides alone.
func (c *Circuits) slowBudget(timeout time.Duration) time.Duration {
	return min(4*timeout, max(c.maxOpTimeout, timeout))
}

// slowSeen notes a call still waited for after took (the store answered
// a ping); the first of a slow spell is logged.
func (c *Circuits) slowSeen(took time.Duration) {
	c.mu.Lock()
	first := !c.slow
	c.slow = true
	c.mu.Unlock()
	if first {
		c.log.Warn("circuit store slow", "waited_ms", took.Milliseconds())
	}
}

// slowOver ends a slow spell: a call answered within its timeout.
func (c *Circuits) slowOver() {
	c.mu.Lock()
	c.slow = false
	c.mu.Unlock()
}

// expiring returns a context under parent that expire ends as a deadline
// does: Err is context.DeadlineExceeded (also for whoever derives from
// it), so a store call ended because its store stopped answering pings is
// taken for the timeout it is — a swap whose outcome is unknown is read
// back — not for a caller's cancellation. parent ending ends it too, with
// parent's error.
func expiring(parent context.Context) (context.Context, func()) {
	e := &expiringCtx{Context: parent, done: make(chan struct{})}
	stop := context.AfterFunc(parent, func() { e.end(parent.Err()) })
	return e, func() {
		stop()
		e.end(context.DeadlineExceeded)
	}
}

type expiringCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
	mu   sync.Mutex
	err  error
}

func (e *expiringCtx) end(err error) {
	e.once.Do(func() {
		e.mu.Lock()
		e.err = err
		e.mu.Unlock()
		close(e.done)
	})
}

func (e *expiringCtx) Done() <-chan struct{} { return e.done }

func (e *expiringCtx) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}
