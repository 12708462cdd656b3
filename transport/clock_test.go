package transport_test

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/syncio"
	"github.com/acp-guard/acp-guard/transport"
)

// clockHooks records the times one event reads while it burns time
// between its reads (a slow machine), and the time its timer's event
// reads.
type clockHooks struct {
	transport.NopHooks
	burn  time.Duration
	delay time.Duration

	mu       sync.Mutex
	reads    []time.Time // the reads of the agent frame's event
	deadline time.Time   // first read + delay
	fired    time.Time   // what the timer's event read
	posted   []time.Time // the reads of a posted event
	done     chan struct{}
}

func (h *clockHooks) AgentMsg(c transport.Ctl, m *transport.Msg, _ *transport.Request) transport.Verdict {
	if m.Method != "x/tick" {
		return transport.Forward
	}
	first := c.Now()
	time.Sleep(h.burn) // the decision and what follows it are slow
	second := c.Now()
	time.Sleep(h.burn)
	third := c.Now()
	c.After(h.delay, func() {
		h.mu.Lock()
		h.fired = c.Now()
		h.mu.Unlock()
		post := c.(interface{ Poster() func(func()) }).Poster()
		// The poster's goroutine: it ends when its event has run.
		go post(func() {
			a := c.Now()
			time.Sleep(h.burn)
			b := c.Now()
			h.mu.Lock()
			h.posted = []time.Time{a, b}
			h.mu.Unlock()
			close(h.done)
		})
	})
	h.mu.Lock()
	h.reads = []time.Time{first, second, third}
	h.deadline = first.Add(h.delay)
	h.mu.Unlock()
	return transport.Forward
}

// TestOneTimePerEvent: every Ctl.Now of one event returns the event's
// stamp however long the event takes, a timer's event is stamped no
// earlier than the deadline its arming event computed (by the monotonic
// and the wall reading), and a posted event gets its own stamp. The old
// loop read the wall clock on every call: the three reads differed by the
// time burnt between them.
func TestOneTimePerEvent(t *testing.T) {
	h := &clockHooks{burn: 30 * time.Millisecond, delay: 20 * time.Millisecond, done: make(chan struct{})}
	inR, inW := io.Pipe()
	var out syncio.Buffer
	res := make(chan error, 1)
	// Run's goroutine: the test waits for it on res.
	go func() {
		_, err := transport.Run(context.Background(), transport.Options{
			Argv: []string{"cat"}, Grace: 2 * time.Second, Stdin: inR, Stdout: &out, Stderr: io.Discard, Hooks: h,
		})
		res <- err
	}()
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"x/tick","params":{}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	<-h.done
	inW.Close()
	if err := <-res; err != nil {
		t.Fatalf("Run: %v", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, r := range h.reads[1:] {
		if !r.Equal(h.reads[0]) {
			t.Errorf("read %d of one event: %v after the first (burnt %v between reads); want the event's one stamp", i+2, r.Sub(h.reads[0]), h.burn)
		}
	}
	if h.fired.Before(h.deadline) || h.fired.Round(0).Before(h.deadline.Round(0)) {
		t.Errorf("the timer's event read %v, before the deadline %v its arming event computed", h.fired, h.deadline)
	}
	if !h.posted[1].Equal(h.posted[0]) {
		t.Errorf("a posted event read two times %v apart", h.posted[1].Sub(h.posted[0]))
	}
	if h.posted[0].Before(h.fired) {
		t.Errorf("a later event's stamp %v is before an earlier one's %v", h.posted[0], h.fired)
	}
}
