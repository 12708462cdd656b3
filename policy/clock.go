package policy

import "time"

// Clock is the time source of the recovery engine. The real clock reads the
// monotonic clock (time.Now, time.AfterFunc); tests inject
// clocktest.FakeClock and advance it by hand.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine (real clock) or from Advance
	// (fake clock) once d has elapsed, unless the timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether
	// it did so.
	Stop() bool
}

// SystemClock is the real clock.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
