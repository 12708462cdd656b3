package guard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/policy"
)

// Parking at fleet scale (issue 24), on virtual time: a parked prompt is
// never failed by waiting, circuit_open means an open circuit, and a
// fallback onto a cooling model takes its probe lease like any retry.

// advance moves every harness's clock by d, in steps of at most one
// second so that the sessions' timers interleave as they would live.
func advance(d time.Duration, hs ...*harness) {
	for d > 0 {
		step := min(d, time.Second)
		for _, h := range hs {
			h.v.Advance(step)
		}
		d -= step
	}
}

// b parks behind a's probe, which runs for two minutes without output —
// far past the end of b's own schedule (+5 s, +10 s, +20 s) — and then
// succeeds. b is never stopped while it waits, nor in its release jitter:
// once released it sends its retry (its first: parking spent none) and
// succeeds.
func TestCircuitParkedPromptIsNeverFailedByWaiting(t *testing.T) {
	cc, _ := sharedCircuits(t)
	a, b := newCircuitHarness(t, cc), newCircuitHarness(t, cc)
	failBoth(t, a, b)
	advance(2*time.Minute, a, b)
	if got := b.clientFrames(); len(got) != 0 {
		t.Fatalf("b answered while parked behind a running probe: %q", got)
	}
	if n := prompts(b.agentFrames()); n != 0 {
		t.Fatalf("b dispatched %d prompts while a probes", n)
	}
	a.agent("%s", msgChunk("Hello")) // the probe's progress closes the circuit
	advance(circuit.DefaultParkPoll+circuit.DefaultReleaseWindow, a, b)
	sent := b.agentFrames()
	if prompts(sent) != 1 || !strings.Contains(sent[len(sent)-1], `"id":"acp-guard:1"`) {
		t.Fatalf("b after the close: sent %q, want its first retry", sent)
	}
	if got := b.clientFrames(); len(got) != 0 {
		t.Fatalf("b answered before its retry returned: %q", got)
	}
	b.agent("%s", msgChunk("Hello"))
	b.agent(`{"jsonrpc":"2.0","id":"acp-guard:1","result":{"stopReason":"end_turn"}}`)
	if got := b.clientFrames(); len(got) != 2 || got[1] != recoveredEndTurn(2) {
		t.Fatalf("b: client got %q, want the chunk and end_turn", got)
	}
}

// circuit_open is the answer only while the circuit is open: a's probe
// fails and re-opens the circuit for the next, doubled step; b (one retry
// in its policy, none of it spent) cannot wait that long and is answered
// circuit_open with the open circuit — at once, not when a timer runs out.
func TestCircuitOpenOnlyWhileOpenAndBeyondTheBudget(t *testing.T) {
	cc, _ := sharedCircuits(t)
	doc := retryPolicy()
	doc.Transient.Retry.MaxRetries = 1
	a, b := newCircuitHarnessWith(t, cc, doc), newCircuitHarnessWith(t, cc, doc)
	failBoth(t, a, b)
	a.agent(`{"jsonrpc":"2.0","id":"acp-guard:1","error":%s}`, overloaded) // a's probe fails: exhausted
	if got := a.clientFrames(); len(got) != 1 || !strings.Contains(got[0], `"reason":"exhausted"`) {
		t.Fatalf("a: %q, want exhausted", got)
	}
	advance(circuit.DefaultParkPoll, b)
	got := b.clientFrames()
	if len(got) != 1 {
		t.Fatalf("b: client got %q, want one answer", got)
	}
	_, _, pe, _ := providerError(t, got[0])
	circ, _ := pe["circuit"].(map[string]any)
	if pe["recovery"].(map[string]any)["reason"] != "circuit_open" || circ == nil || circ["state"] != "open" || circ["cooldownUntil"] == nil {
		t.Fatalf("b: %s, want circuit_open with the open circuit", got[0])
	}
	if n := prompts(b.agentFrames()); n != 0 {
		t.Fatalf("b dispatched %d prompts into the outage", n)
	}
}

// Three sessions fall back to model-b, whose circuit opened three seconds
// ago: they switch, park on model-b's cooldown, and exactly one probes it
// when it ends; the others wait for its outcome and go once it succeeds.
func TestCircuitFallbackTakesTheProbeLease(t *testing.T) {
	cc, st := sharedCircuits(t)
	doc := policy.Default()
	doc.Transient = policy.ClassPolicy{OnExhausted: policy.OutcomeSkip}
	keyB := circuit.Key{Provider: "claude-agent-acp", Model: "model-b", Scope: "provider"}
	if _, err := cc.Fail(context.Background(), keyB, circuit.Failure{Class: "transient", Code: "provider_overloaded", Backoff: 3 * time.Second},
		"elsewhere", epoch); err != nil {
		t.Fatal(err)
	}
	hs := []*harness{newCircuitHarnessWith(t, cc, doc, "model-b"), newCircuitHarnessWith(t, cc, doc, "model-b"), newCircuitHarnessWith(t, cc, doc, "model-b")}
	for _, h := range hs {
		h.start()
		h.agent(`{"jsonrpc":"2.0","id":2,"error":%s}`, overloaded)
		sent := h.agentFrames()
		if len(sent) != 1 || !strings.Contains(sent[0], `"method":"session/set_model"`) {
			t.Fatalf("want a switch to model-b (cooling down for 3 s: a cooldown probe), got %q", sent)
		}
		h.agent(`{"jsonrpc":"2.0","id":"acp-guard:1","result":{}}`)
	}
	recs, _ := st.List(context.Background())
	var keys []string
	for _, r := range recs {
		keys = append(keys, r.Key.String())
	}
	if strings.Join(keys, " ") != "default/claude-agent-acp/model-a/provider default/claude-agent-acp/model-b/provider" {
		t.Fatalf("circuits %v: the test's key for model-b does not match the guard's", keys)
	}
	sent := 0
	for _, h := range hs {
		sent += prompts(h.agentFrames())
	}
	if sent != 0 {
		t.Fatalf("%d prompts went to model-b while its circuit cools down, want 0", sent)
	}
	advance(4*time.Second, hs...)
	var prober *harness
	for _, h := range hs {
		if prompts(h.agentFrames()) == 1 {
			if prober != nil {
				t.Fatal("two sessions probe model-b")
			}
			prober = h
		}
	}
	if prober == nil {
		t.Fatal("nobody probes model-b after its cooldown")
	}
	prober.agent("%s", msgChunk("Hello"))
	prober.agent(`{"jsonrpc":"2.0","id":"acp-guard:2","result":{"stopReason":"end_turn"}}`)
	advance(circuit.DefaultParkPoll+circuit.DefaultReleaseWindow, hs...)
	for _, h := range hs {
		if h != prober && prompts(h.agentFrames()) != 1 {
			t.Fatal("a session parked behind the probe did not go after its success")
		}
	}
}
