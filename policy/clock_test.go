package policy

import (
	"testing"
	"time"
)

func TestSystemClock(t *testing.T) {
	done := make(chan struct{})
	SystemClock.AfterFunc(0, func() { close(done) })
	<-done
	tm := SystemClock.AfterFunc(time.Hour, func() { t.Error("stopped timer fired") })
	if !tm.Stop() {
		t.Errorf("Stop: got false, want true for a pending timer")
	}
	if SystemClock.Now().IsZero() {
		t.Errorf("Now: got the zero time")
	}
}
