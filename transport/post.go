package transport

// Poster is an Output whose relay goroutine can be entered from any
// goroutine: the live event loop. Post runs fn as one event of the loop,
// under its lock, after the events already being handled; fn is dropped
// once the session is over. Post never waits for a disk or a pipe, only
// for the loop's lock.
type Poster interface {
	Post(fn func())
}

// Poster returns a function that runs fn on the relay's goroutine and may
// be called from any goroutine (a hook's own worker reporting back), or
// nil when the Output has no loop to enter (Virtual: offline replay and
// tests run everything in line, synchronously).
func (r *Relay) Poster() func(fn func()) {
	if p, ok := r.out.(Poster); ok {
		return p.Post
	}
	return nil
}

// Post runs fn on the loop as an event (see Poster).
func (l *loop) Post(fn func()) { l.handle(event{kind: evFire, fire: &scheduled{fn: fn}}) }
