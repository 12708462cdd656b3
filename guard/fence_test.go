package guard_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/transport"
)

// postingVirtual is a virtual relay output with an event loop to post
// into, held by the test: the guard's workers run their I/O on their own
// goroutines, as in the live proxy, and each result waits in posted
// until the test runs it — after whatever the test lets happen first.
type postingVirtual struct {
	*transport.Virtual
	mu     sync.Mutex
	posted []func()
	wake   chan struct{}
}

func (o *postingVirtual) Post(fn func()) {
	o.mu.Lock()
	o.posted = append(o.posted, fn)
	o.mu.Unlock()
	o.wake <- struct{}{}
}

// await waits for n more results to be posted and returns them.
func (o *postingVirtual) await(n int) []func() {
	for range n {
		<-o.wake
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.posted
	o.posted = nil
	return out
}

// retrySent reports whether one of the agent's frames is a retry of the
// client's prompt (acp-guard's own session/prompt).
func retrySent(frames [][]byte) bool {
	for _, f := range frames {
		if strings.Contains(string(f), `"method":"session/prompt"`) {
			return true
		}
	}
	return false
}

// TestFenceDropsStaleCallbacks: a worker's result that comes back after
// the prompt moved on (here: the client cancelled the held prompt while
// the result was on its way) is dropped by the prompt's fence: the
// attempt record's completion schedules no wait (no notice reaches the
// client after its answer), and the circuit's answer dispatches nothing
// and moves nothing (no transition the table refuses). Without the
// cancel, the same results dispatch the retry.
func TestFenceDropsStaleCallbacks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		circuits bool // the stale result is the circuit's answer (else the record's completion)
		cancel   bool
	}{
		{"record written, prompt current", false, false},
		{"record written after a cancel", false, true},
		{"circuit answered, prompt current", true, false},
		{"circuit answered after a cancel", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := &postingVirtual{Virtual: transport.NewVirtual(epoch), wake: make(chan struct{}, 64)}
			h := &harness{t: t, v: out.Virtual}
			var logs syncBuf
			cfg := guard.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				Identity: observers.Identity{Flag: "claude-agent-acp"}, Engine: catalogue.Default(), Policy: retryPolicy(),
				Attempts: h, Events: guard.Turns(func(r guard.TurnReport) { h.reports = append(h.reports, r) }),
			}
			if tc.circuits {
				st, err := circuit.OpenStore("file", circuit.Options{Dir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				cfg.Circuits = circuit.New(circuit.Config{Store: st})
			}
			g := guard.New(cfg)
			h.r = transport.NewRelay(transport.Config{MaxLine: 1 << 20, Hooks: g}, out)
			h.start()

			// The failure: a retry in 5 s, once its record is written.
			h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
			posted := 1 // the record's completion
			if tc.circuits {
				posted++ // the circuit's Fail reported back (CircuitChanged)
			}
			results := out.await(posted)
			if tc.circuits {
				for _, fn := range results {
					fn() // the record is durable: the wait starts
				}
				out.Advance(5 * time.Second) // the wait ends: the circuit is asked
				results = out.await(1)
			}
			if tc.cancel {
				h.client(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)
			}
			for _, fn := range results {
				fn() // the result comes back into the event loop
			}
			out.Advance(time.Hour)
			retried := retrySent(out.TakeAgent())
			g.Close()
			if retried == tc.cancel {
				t.Fatalf("retry sent: %v; want %v", retried, !tc.cancel)
			}
			if !tc.cancel {
				return
			}
			// The cancel's answer is the last thing the client hears of
			// the prompt, and nothing tried to move it again.
			client := h.clientFrames()
			if n := len(client); n == 0 || client[n-1] != `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}` {
				t.Errorf("client after the cancel: %q; want the cancelled answer last", client)
			}
			if len(h.reports) != 1 || h.reports[0].StopReason != "cancelled" {
				t.Errorf("reports %+v; want the one cancelled answer", h.reports)
			}
			if strings.Contains(logs.String(), "level=ERROR") {
				t.Errorf("a stale callback acted:\n%s", logs.String())
			}
		})
	}
}
