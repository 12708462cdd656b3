package guard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// Circuits inside the state machine, on virtual time: two guards (two
// "processes") share one file store; without a Poster the store calls run
// in line, so every step is deterministic.

func newCircuitHarness(t *testing.T, cc *circuit.Circuits) *harness {
	t.Helper()
	return newCircuitHarnessWith(t, cc, retryPolicy()) // 3 retries from 5 s
}

func newCircuitHarnessWith(t *testing.T, cc *circuit.Circuits, doc policy.Document, fallback ...string) *harness {
	t.Helper()
	h := &harness{t: t, v: transport.NewVirtual(epoch)}
	g := guard.New(guard.Config{
		Identity: observers.Identity{Flag: "claude-agent-acp"},
		Engine:   catalogue.Default(),
		Policy:   doc,
		Fallback: fallback,
		Events:   guard.Turns(func(r guard.TurnReport) { h.reports = append(h.reports, r) }),
		Circuits: cc,
	})
	h.r = transport.NewRelay(transport.Config{MaxLine: 1 << 20, Hooks: g}, h.v)
	return h
}

func sharedCircuits(t *testing.T) (*circuit.Circuits, circuit.Store) {
	t.Helper()
	st, err := circuit.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return circuit.New(circuit.Config{Store: st}), st
}

func prompts(frames []string) int {
	n := 0
	for _, f := range frames {
		if strings.Contains(f, `"method":"session/prompt"`) {
			n++
		}
	}
	return n
}

// failBoth fails the client's own attempt in a and b (the circuit opens
// until now+5 s) and advances both to the retry's deadline: a probes, b
// parks behind a's probe.
func failBoth(t *testing.T, a, b *harness) {
	t.Helper()
	for _, h := range []*harness{a, b} {
		h.start()
		h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
		h.clientFrames()
	}
	a.v.Advance(5 * time.Second)
	if n := prompts(a.agentFrames()); n != 1 {
		t.Fatalf("a: %d prompts dispatched at the deadline, want 1 (the probe)", n)
	}
	b.v.Advance(5 * time.Second)
	if n := prompts(b.agentFrames()); n != 0 {
		t.Fatalf("b: %d prompts dispatched while a probes, want 0 (parked)", n)
	}
}

// The gate holds while parked: late activity for b's session stops it
// like any held turn, and it never dispatches. a's probe shows progress:
// the circuit closes.
func TestCircuitParkedLateActivityAndProbeProgress(t *testing.T) {
	cc, st := sharedCircuits(t)
	a, b := newCircuitHarness(t, cc), newCircuitHarness(t, cc)
	failBoth(t, a, b)

	b.agent("%s", msgChunk("still working on it"))
	got := b.clientFrames()
	if len(got) != 2 {
		t.Fatalf("b: client got %q, want the chunk and one ProviderError", got)
	}
	answer := got[0] // the answer goes out before the chunk that caused it
	if _, _, pe, _ := providerError(t, answer); pe["recovery"].(map[string]any)["reason"] != "late_activity" {
		t.Errorf("b: answered %s, want late_activity", answer)
	}
	b.v.Advance(time.Hour)
	if n := prompts(b.agentFrames()); n != 0 || len(b.clientFrames()) != 0 {
		t.Errorf("b: dispatched %d prompts or answered again after late activity", n)
	}

	a.agent("%s", msgChunk("Hello"))
	recs, err := st.List(context.Background())
	if err != nil || len(recs) != 1 || !recs[0].Closed() {
		t.Fatalf("after the probe's first chunk: records %+v (%v), want one closed circuit", recs, err)
	}
	a.agent(`{"jsonrpc":"2.0","id":"acp-guard:1","result":{"stopReason":"end_turn"}}`)
	if got := a.clientFrames(); len(got) != 2 || got[1] != recoveredEndTurn(2) {
		t.Errorf("a: client got %q, want the chunk and end_turn", got)
	}
}

// A probe cancelled by the client gives its lease back: the parked
// session probes at its next question instead of waiting out the lease.
func TestCircuitCancelledProbeReleasesLease(t *testing.T) {
	cc, _ := sharedCircuits(t)
	a, b := newCircuitHarness(t, cc), newCircuitHarness(t, cc)
	failBoth(t, a, b)

	a.client(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)
	a.agent(`{"jsonrpc":"2.0","id":"acp-guard:1","result":{"stopReason":"cancelled"}}`)
	a.clientFrames()
	b.v.Advance(circuit.DefaultParkPoll)
	if n := prompts(b.agentFrames()); n != 1 {
		t.Fatalf("b: %d prompts dispatched one park poll after the probe was cancelled, want 1 (b probes)", n)
	}
}

// failingStore is a store that cannot answer.
type failingStore struct{}

var errDown = errors.New("store down")

func (failingStore) Get(context.Context, string) (*circuit.Record, uint64, error) {
	return nil, 0, errDown
}
func (failingStore) CompareAndSwap(context.Context, string, circuit.Record, uint64) error {
	return errDown
}
func (failingStore) List(context.Context) ([]circuit.Record, error) { return nil, errDown }
func (failingStore) Delete(context.Context, string) error           { return errDown }
func (failingStore) Close() error                                   { return nil }

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A store that fails never blocks a turn: recovery goes on as without
// circuits, and the outage is logged once.
func TestCircuitStoreDownRecoversAlone(t *testing.T) {
	var logs syncBuf
	cc := circuit.New(circuit.Config{Store: failingStore{}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	h := newCircuitHarness(t, cc)
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	h.v.Advance(5 * time.Second)
	if n := prompts(h.agentFrames()); n != 1 {
		t.Fatalf("%d prompts dispatched at the deadline with the store down, want 1", n)
	}
	h.agent(`{"jsonrpc":"2.0","id":"acp-guard:1","error":%s}`, overloaded)
	h.v.Advance(10 * time.Second)
	if n := prompts(h.agentFrames()); n != 1 {
		t.Fatalf("%d prompts dispatched at the second deadline, want 1", n)
	}
	h.agent("%s", msgChunk("Hello"))
	h.agent(`{"jsonrpc":"2.0","id":"acp-guard:2","result":{"stopReason":"end_turn"}}`)
	if got := h.clientFrames(); len(got) == 0 || got[len(got)-1] != recoveredEndTurn(3) {
		t.Errorf("client got %q, want end_turn last", got)
	}
	if n := strings.Count(logs.String(), "circuit store unavailable"); n != 1 {
		t.Errorf("store outage logged %d times, want once:\n%s", n, logs.String())
	}
}

// A probe whose turn runs long keeps its lease: a session asking after
// the lease's first TTL would have run out still parks.
func TestCircuitProbeRefreshesLease(t *testing.T) {
	cc, _ := sharedCircuits(t)
	a, b := newCircuitHarness(t, cc), newCircuitHarness(t, cc)
	failBoth(t, a, b) // a's lease: until epoch+5s+TTL
	a.v.Advance(circuit.DefaultLeaseTTL + 5*time.Second)

	c := newCircuitHarness(t, cc)
	c.v.Advance(circuit.DefaultLeaseTTL + 10*time.Second)
	c.start()
	c.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	c.v.Advance(5 * time.Second)
	if n := prompts(c.agentFrames()); n != 0 {
		t.Fatalf("c: %d prompts dispatched while a's long probe runs, want 0 (parked)", n)
	}
}

// recoveredEndTurn is the client's end_turn after a recovery of attempts
// attempts: the agent's result marked with _meta.acpGuard.
func recoveredEndTurn(attempts int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"result":{"_meta":{"acpGuard":{"attempts":%d}},"stopReason":"end_turn"}}`, attempts)
}

// A held prompt retried now (the client's or an operator's retry_now) goes
// out without asking the circuit, so it holds no probe lease; when that
// retry succeeds the provider is back, and the success closes the circuit
// as a probe's would: sessions parked on it are released instead of
// waiting out the cooldown.
func TestCircuitRetryNowSuccessClosesCircuit(t *testing.T) {
	cc, st := sharedCircuits(t)
	h := newCircuitHarness(t, cc)
	h.start()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	h.clientFrames() // the retry notice
	recs, err := st.List(context.Background())
	if err != nil || len(recs) != 1 || recs[0].Closed() {
		t.Fatalf("after the failure: records %+v (%v), want one open circuit", recs, err)
	}
	got := h.recovery("s1", "retry_now")
	if r := recoveryResult(t, got[len(got)-1]); r.State != "retrying" {
		t.Fatalf("retry_now answered %+v, want retrying", r)
	}
	if n := prompts(h.agentFrames()); n != 1 {
		t.Fatalf("%d prompts sent on retry_now, want 1", n)
	}
	h.agent("%s", msgChunk("Hello"))
	h.agent(`{"jsonrpc":"2.0","id":"acp-guard:1","result":{"stopReason":"end_turn"}}`)
	if got := h.clientFrames(); len(got) != 2 || got[1] != recoveredEndTurn(2) {
		t.Fatalf("client got %q, want the chunk and end_turn for 2", got)
	}
	recs, err = st.List(context.Background())
	if err != nil || len(recs) != 1 || !recs[0].Closed() {
		t.Errorf("after the retried prompt succeeded: records %+v (%v), want the circuit closed", recs, err)
	}
}
