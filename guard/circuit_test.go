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
	st, err := circuit.OpenStore("file", circuit.Options{Dir: t.TempDir()})
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

// downable is a shared store that can be taken down (every call fails).
type downable struct {
	circuit.Store
	down bool
	gets []string // the ids read, in order
	mu   sync.Mutex
}

func (s *downable) Get(ctx context.Context, id string) (*circuit.Record, uint64, error) {
	s.mu.Lock()
	down := s.down
	s.gets = append(s.gets, id)
	s.mu.Unlock()
	if down {
		return nil, 0, errDown
	}
	return s.Store.Get(ctx, id)
}

func (s *downable) CompareAndSwap(ctx context.Context, id string, rec circuit.Record, rev uint64) error {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		return errDown
	}
	return s.Store.CompareAndSwap(ctx, id, rec, rev)
}

// The first session/new reads the circuit of the session's provider-wide
// failures once (the store bound before the first prompt needs it), and
// that read is a view to decide on: another process opened the circuit,
// the store then went away, and this session's retry parks on the
// circuit's cooldown instead of dispatching into the outage. A second
// session reads nothing more.
func TestCircuitWarmReadAtFirstSession(t *testing.T) {
	shared, err := circuit.OpenStore("file", circuit.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.Close() })
	st := &downable{Store: shared}
	other := circuit.New(circuit.Config{Store: shared})
	key := circuit.Key{Namespace: "default", Provider: "claude-agent-acp", Model: "model-a", Scope: "provider"}
	if _, err := other.Fail(context.Background(), key, circuit.Failure{Class: "transient", Code: "provider_overloaded",
		CooldownUntil: epoch.Add(20 * time.Second), Backoff: 20 * time.Second}, "other/1", epoch); err != nil {
		t.Fatal(err)
	}
	h := newCircuitHarness(t, circuit.New(circuit.Config{Store: st}))
	h.client(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	h.agent(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1","models":{"availableModels":[{"modelId":"model-a","name":"A"}],"currentModelId":"model-a"}}}`)
	nk, _ := key.Normalize()
	if len(st.gets) != 1 || st.gets[0] != nk.ID() {
		t.Fatalf("reads at the first session/new: %v, want one of %s (%s)", st.gets, nk.ID(), key)
	}
	h.client(`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	h.agent(`{"jsonrpc":"2.0","id":3,"result":{"sessionId":"s2"}}`)
	if len(st.gets) != 1 {
		t.Fatalf("a second session/new read the store again: %v", st.gets)
	}
	st.mu.Lock()
	st.down = true
	st.mu.Unlock()
	h.client(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}`)
	h.clientFrames()
	h.agentFrames()
	h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
	h.v.Advance(5 * time.Second)
	if n := prompts(h.agentFrames()); n != 0 {
		t.Fatalf("%d prompts dispatched at the retry's deadline, the store down and the circuit open in the warm read's view; want 0 (parked)", n)
	}
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
