package guard

import (
	"testing"

	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// TestFenceScopes: what moves each kind of fence. A state fence falls at
// the prompt's next transition, a hold fence when its hold ends (or
// another begins), a prompt fence only when the prompt is answered; every
// fence falls when the client is gone. A callback armed under a fallen
// fence does nothing (then), or its dropped part (orElse).
func TestFenceScopes(t *testing.T) {
	g := New(Config{})
	v := transport.NewVirtual(epochForTest)
	r := transport.NewRelay(transport.Config{Hooks: g}, v)
	turn := g.tracker.Start("s1", epochForTest)
	p := &prompt{client: &transport.Request{ID: []byte("7")}, session: "s1", first: turn, turn: turn, state: stActive,
		last: &failure{turn: turn}}
	g.m.add(p)
	move := func(on event) {
		t.Helper()
		if !g.m.transit(r, p, step{on: on, d: policy.Decision{Action: policy.ActionStop, Reason: "test"}}, func() {}) {
			t.Fatalf("%s --%s--> refused", p.state, on)
		}
	}
	ran := func(f fence) (ran bool) {
		f.then(func() { ran = true })()
		return ran
	}

	whole := g.m.promptFence(p)
	active := g.m.fence(p)
	move(onRetry) // active --retry--> retry_wait: a hold begins
	if ran(active) || !ran(g.m.fence(p)) || !ran(whole) {
		t.Fatal("a transition must drop the state's callbacks only")
	}
	hold := g.m.holdFence(p, p.hold.n)
	wait := g.m.fence(p)
	move(onPark) // retry_wait --park--> parked: the same hold
	if !ran(hold) || ran(wait) {
		t.Fatal("a transition within a hold must keep the hold's callbacks")
	}
	move(onDue) // parked --due--> retrying: the hold ends
	if ran(hold) || !ran(whole) {
		t.Fatal("the end of a hold must drop its callbacks, and only them")
	}
	dropped := false
	g.m.fence(p).orElse(func() {}, func() { dropped = true })()
	if dropped {
		t.Fatal("orElse ran its dropped part under a live fence")
	}
	f := g.m.fence(p)
	g.ClientClosed(r)
	f.orElse(func() { t.Fatal("ran after the client left") }, func() { dropped = true })()
	if !dropped || ran(whole) {
		t.Fatal("every fence falls when the client is gone")
	}
	if f.moved() {
		t.Fatal("the client leaving does not move the prompt")
	}
	move(onStall) // retrying --stall--> stalled
	move(onGiveUp)
	if !whole.moved() {
		t.Fatal("an answered prompt's fence must fall")
	}
}
