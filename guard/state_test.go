package guard

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

var epochForTest = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// tableLines renders the transition table as doc.go shows it: consecutive
// rows that differ only in their source state share a line.
func tableLines() []string {
	var out []string
	for i := 0; i < len(transitions); {
		e := transitions[i]
		from := []string{e.from.String()}
		j := i + 1
		for ; j < len(transitions); j++ {
			n := transitions[j]
			if n.on != e.on || n.to != e.to || n.persist != e.persist || n.schedules != e.schedules || n.lease != e.lease {
				break
			}
			from = append(from, n.from.String())
		}
		line := strings.Join(from, " | ") + " --" + e.on.String() + "--> " + e.to.String()
		var notes []string
		switch {
		case e.schedules:
			notes = append(notes, "record "+string(e.persist)+", then the work")
		case e.persist != "":
			notes = append(notes, "record "+string(e.persist))
		}
		if e.lease != leaseKept {
			notes = append(notes, e.lease.String())
		}
		if len(notes) > 0 {
			line += "  [" + strings.Join(notes, "; ") + "]"
		}
		out = append(out, line)
		i = j
	}
	return out
}

// TestTransitionTableMatchesDoc: the table in doc.go is the code's.
func TestTransitionTableMatchesDoc(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var doc []string
	for _, ln := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(ln, "//\t") && strings.Contains(ln, "--> ") {
			doc = append(doc, strings.TrimPrefix(ln, "//\t"))
		}
	}
	want := tableLines()
	if strings.Join(doc, "\n") != strings.Join(want, "\n") {
		t.Errorf("doc.go's transition table differs from the code's; it should read:\n//\t%s", strings.Join(want, "\n//\t"))
	}
}

// TestTransitionsRefused enumerates every (state, event) pair: the pairs in
// the table move the prompt to the row's state; every other pair is
// refused and changes nothing.
func TestTransitionsRefused(t *testing.T) {
	allowed := map[[2]uint8]state{}
	for _, e := range transitions {
		allowed[[2]uint8{uint8(e.from), uint8(e.on)}] = e.to
	}
	for s := state(0); s < nStates; s++ {
		for ev := event(0); ev < nEvents; ev++ {
			g := New(Config{})
			v := transport.NewVirtual(epochForTest)
			r := transport.NewRelay(transport.Config{Hooks: g}, v)
			turn := g.tracker.Start("s1", epochForTest)
			p := &prompt{client: &transport.Request{ID: []byte("7")}, session: "s1", first: turn, turn: turn, state: s,
				last: &failure{turn: turn}}
			g.m.prompts[p.client] = p
			if s.waiting() {
				g.m.waiting = 1
			}
			ran := false
			ok := g.m.transit(r, p, step{on: ev, d: policy.Decision{Action: policy.ActionStop, Reason: "test"}}, func() { ran = true })
			to, want := allowed[[2]uint8{uint8(s), uint8(ev)}]
			switch {
			case want && (!ok || p.state != to || !ran):
				t.Errorf("%s --%s--> %s: refused or not done (ok %v, state %s, then ran %v)", s, ev, to, ok, p.state, ran)
			case !want && (ok || p.state != s || ran || p.epoch != 0):
				t.Errorf("%s --%s-->: not in the table but done (state %s)", s, ev, p.state)
			}
			if want && p.state.waiting() != (g.m.waiting == 1) {
				t.Errorf("%s --%s--> %s: held count %d", s, ev, to, g.m.waiting)
			}
		}
	}
	// Terminal states have no way out.
	for _, e := range transitions {
		if e.from == stAnswered || e.from == stActionRequired {
			t.Errorf("a transition leaves the terminal state %s", e.from)
		}
	}
}
