package circuit

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/natstest"
)

// The stampede simulation: N sessions (as many guards would run them)
// behind one provider that is down for a while, each recovering on its own
// retry schedule, all sharing one circuit. Time is simulated: an event queue
// ordered by (time, sequence) drives every session, nothing sleeps.

type simEvent struct {
	at  time.Time
	seq int
	fn  func(now time.Time)
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	return cmp.Or(q[i].at.Compare(q[j].at), cmp.Compare(q[i].seq, q[j].seq)) < 0
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type simAttempt struct {
	session  int
	kind     string // initial | go | probe
	start    time.Time
	failed   bool
	reopened time.Time // for a failed probe: the cooldown its failure set
}

type stampede struct {
	t         *testing.T
	machines  []*Circuits // session i runs on machines[i%len]
	retries   int         // each session's policy: retries from simInitial
	q         simQueue
	seq       int
	outageEnd time.Time
	attempts  []simAttempt
	answers   map[int][]string // session → outcomes (must be exactly one each)
	closedAt  time.Time
}

const (
	simAttemptLen = 200 * time.Millisecond // provider time of one attempt
	simFirstChunk = 50 * time.Millisecond  // progress shows this long after dispatch
	simInitial    = time.Second
)

func (s *stampede) at(when time.Time, fn func(time.Time)) {
	s.seq++
	heap.Push(&s.q, simEvent{at: when, seq: s.seq, fn: fn})
}

func (s *stampede) run() {
	for s.q.Len() > 0 {
		e := heap.Pop(&s.q).(simEvent)
		e.fn(e.at)
	}
}

func holderOf(i int) string { return fmt.Sprintf("host-%d/4242/sess-%03d/1", i%4, i) }

// delay is the session's policy delay before retry n (0-based): 1s, 2s, 4s…
func delay(n int) time.Duration { return simInitial << n }

// simSession drives one session through its failures and retries as the
// guard does (guard/circuit.go): a failure reports Fail with the session's
// own next delay and waits that delay; at its end the session asks the
// circuit. A park on a cooldown spends the session's parking budget (what
// its own schedule would still have waited); a park behind a probe or in
// the release jitter spends nothing. The session stops with circuit_open
// only when a cooldown's end lies beyond its budget (the guard allows a
// second more; the simulation checks the stricter rule).
type simSession struct {
	s       *stampede
	i       int
	used    int           // retries decided so far
	budget  time.Duration // what is left of the parking budget
	parking bool          // parked since the last failure (the budget is set)
}

func (ss *simSession) c() *Circuits { return ss.s.machines[ss.i%len(ss.s.machines)] }

func (ss *simSession) dispatch(now time.Time, kind string) {
	s := ss.s
	c := ss.c()
	s.attempts = append(s.attempts, simAttempt{session: ss.i, kind: kind, start: now})
	idx := len(s.attempts) - 1
	if now.Before(s.outageEnd) {
		s.at(now.Add(simAttemptLen), func(now time.Time) { ss.failed(now, idx) })
		return
	}
	s.at(now.Add(simFirstChunk), func(now time.Time) {
		if _, err := c.Progress(ctx, testKey, now); err != nil {
			s.t.Errorf("Progress: %v", err)
		}
		if s.closedAt.IsZero() {
			s.closedAt = now
		}
	})
	s.at(now.Add(simAttemptLen), func(time.Time) { ss.answer("ok") })
}

func (ss *simSession) failed(now time.Time, idx int) {
	s := ss.s
	s.attempts[idx].failed = true
	if ss.used == s.retries {
		ss.answer("exhausted")
		return
	}
	d := delay(ss.used)
	ss.used++
	ss.parking = false
	snap, err := ss.c().Fail(ctx, testKey, backoff(d), holderOf(ss.i), now)
	if err != nil {
		s.t.Errorf("Fail: %v", err)
	}
	if s.attempts[idx].kind == "probe" && snap.CooldownUntil != nil {
		s.attempts[idx].reopened = *snap.CooldownUntil
	}
	s.at(now.Add(d), ss.ask)
}

// ask is the guard's retry_wait deadline: before dispatching, ask the circuit.
func (ss *simSession) ask(now time.Time) {
	s := ss.s
	d, err := ss.c().Acquire(ctx, testKey, holderOf(ss.i), now)
	if err != nil {
		s.t.Errorf("Acquire: %v", err)
	}
	switch d.Action {
	case Go, Probe:
		ss.dispatch(now, d.Action.String())
	case Park:
		if !ss.parking {
			ss.parking = true
			ss.budget = 0
			for n := ss.used; n < s.retries; n++ {
				ss.budget += delay(n)
			}
		}
		if d.Wait == WaitCooldown {
			wait := d.Circuit.CooldownUntil.Sub(now)
			if wait > ss.budget {
				ss.answer("circuit_open")
				return
			}
			ss.budget -= wait
		}
		s.at(d.Until, ss.ask)
	}
}

func (ss *simSession) answer(outcome string) {
	ss.s.answers[ss.i] = append(ss.s.answers[ss.i], outcome)
}

func runStampede(t *testing.T, machines []*Circuits, n, retries int, outage time.Duration) *stampede {
	s := &stampede{t: t, machines: machines, retries: retries, outageEnd: t0.Add(outage), answers: map[int][]string{}}
	for i := range n {
		ss := &simSession{s: s, i: i}
		s.at(t0.Add(time.Duration(i)*10*time.Millisecond), func(now time.Time) { ss.dispatch(now, "initial") })
	}
	s.run()
	return s
}

func TestStampedeOneProbePerCooldown(t *testing.T) {
	for _, tt := range []struct {
		name   string
		stores func(t *testing.T) []Store // one per machine
	}{
		{"memory", func(*testing.T) []Store { return []Store{newMemStore()} }},
		{"file-4-handles", func(t *testing.T) []Store {
			dir := t.TempDir()
			return []Store{openFile(t, dir), openFile(t, dir), openFile(t, dir), openFile(t, dir)}
		}},
		{"nats-2-machines", func(t *testing.T) []Store {
			ns := natstest.Start(t)
			return []Store{openNATS(t, ns.URL()), openNATS(t, ns.URL())}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name != "memory" && testing.Short() {
				t.Skip("a few thousand store operations")
			}
			stores := tt.stores(t)
			s := runStampede(t, simMachines(stores), 200, 8, 47*time.Second)
			checkStampede(t, s, 200)
			if ms, ok := stores[0].(*memStore); ok {
				// Writes: the opening, each probe's lease and its failure,
				// the close, and a re-opening while the first failures still
				// came in after the first cooldown: never one per failure.
				_, puts := ms.counts()
				probes := 0
				for _, a := range s.attempts {
					if a.kind == "probe" {
						probes++
					}
				}
				t.Logf("%d store writes for %d failures and %d probes", puts, len(s.attempts)-200, probes)
				if puts > 2*probes+4 {
					t.Errorf("%d store writes for %d probes, want at most %d (writes only on change)", puts, probes, 2*probes+4)
				}
			}
		})
	}
}

func simMachines(stores []Store) []*Circuits {
	var machines []*Circuits
	for _, st := range stores {
		machines = append(machines, New(Config{Store: st, Seed: 7, ParkPoll: 2 * time.Second,
			ReleaseWindow: 3 * time.Second, OpTimeout: 2 * time.Minute}))
	}
	return machines
}

// TestStampedeParkingNeverFails is the small case: 20 sessions
// (and 4), "3 retries from 1 s", a 5 s outage. Without circuits each
// session's third retry, at +7 s, succeeds; with them every session must
// succeed too — none may be stopped because it waited behind another
// session's probe or in the release jitter.
func TestStampedeParkingNeverFails(t *testing.T) {
	for _, n := range []int{4, 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := runStampede(t, simMachines([]Store{newMemStore()}), n, 3, 5*time.Second)
			for i := range n {
				if got := s.answers[i]; len(got) != 1 || got[0] != "ok" {
					t.Errorf("session %d answered %v, want [ok]", i, got)
				}
			}
			checkProbes(t, s)
		})
	}
}

// TestStampedeOutageBeyondEverySchedule: when the outage outlasts every
// session's schedule, sessions stop with circuit_open (never more than
// one retry per cooldown reaches the provider), each answered once.
func TestStampedeOutageBeyondEverySchedule(t *testing.T) {
	const n = 50
	s := runStampede(t, simMachines([]Store{newMemStore()}), n, 3, time.Hour)
	outcomes := map[string]int{}
	for i := range n {
		got := s.answers[i]
		if len(got) != 1 {
			t.Fatalf("session %d answered %v, want one answer", i, got)
		}
		outcomes[got[0]]++
	}
	if outcomes["ok"] != 0 || outcomes["circuit_open"] == 0 {
		t.Fatalf("outcomes %v, want circuit_open (and exhausted for probers) only", outcomes)
	}
	checkProbes(t, s)
	t.Logf("%d sessions, outage beyond the schedule: %v, %d attempts", n, outcomes, len(s.attempts))
}

// checkProbes: during the outage only probes reached the provider (besides
// the sessions' own prompts), one at a time, each after the cooldown the
// previous one's failure set; the cooldowns follow the circuit's own
// doubling schedule, whoever probed; and no session probed twice in a row
// while others waited.
func checkProbes(t *testing.T, s *stampede) []simAttempt {
	t.Helper()
	var probes []simAttempt
	for _, a := range s.attempts {
		if a.kind == "initial" || !a.start.Before(s.outageEnd) {
			continue
		}
		if a.kind != "probe" {
			t.Fatalf("a %s attempt by session %d reached the provider during the outage at +%v", a.kind, a.session, a.start.Sub(t0))
		}
		probes = append(probes, a)
	}
	for k := 1; k < len(probes); k++ {
		prev, cur := probes[k-1], probes[k]
		if cur.start.Before(prev.reopened) {
			t.Fatalf("probe %d at +%v before the cooldown +%v set by probe %d", k, cur.start.Sub(t0), prev.reopened.Sub(t0), k-1)
		}
		if cur.session == prev.session {
			t.Errorf("session %d probed twice in a row (probes %d and %d)", cur.session, k-1, k)
		}
	}
	for k, a := range probes {
		if !a.failed {
			continue
		}
		end := a.start.Add(simAttemptLen)
		if want := simInitial << (k + 1); a.reopened.Sub(end) != want {
			t.Errorf("probe %d failed at +%v and set a cooldown of %v, want %v (the circuit's schedule)",
				k, end.Sub(t0), a.reopened.Sub(end), want)
		}
	}
	return probes
}

func checkStampede(t *testing.T, s *stampede, n int) {
	// Every session answered exactly once, and none gave up: the outage is
	// shorter than every schedule.
	for i := range n {
		if got := s.answers[i]; len(got) != 1 || got[0] != "ok" {
			t.Fatalf("session %d answered %v, want [ok]", i, got)
		}
	}
	probes := checkProbes(t, s)
	if len(probes) == 0 || len(probes) > 8 {
		t.Fatalf("%d probes during a 47 s outage", len(probes))
	}

	// Recovery: one probe (the first attempt after the outage) closed the
	// circuit; the other sessions were released over the jitter window.
	var releases []time.Duration
	for _, a := range s.attempts {
		if !a.start.Before(s.outageEnd) {
			releases = append(releases, a.start.Sub(s.closedAt))
		}
	}
	slices.Sort(releases)
	if len(releases) != n {
		t.Fatalf("%d dispatches after the outage, want %d (each session once)", len(releases), n)
	}
	if first := releases[0]; first != -simFirstChunk {
		t.Fatalf("first dispatch after the outage at %v from close, want the probe (%v)", first, -simFirstChunk)
	}
	rest := releases[1:]
	window := 3*time.Second + 2*time.Second // release window + one park poll
	if last := rest[len(rest)-1]; rest[0] < 0 || last >= window {
		t.Fatalf("releases span [%v, %v], want within [0, %v)", rest[0], last, window)
	}
	const bucket = 100 * time.Millisecond
	hist := map[time.Duration]int{}
	distinct := map[time.Duration]bool{}
	for _, r := range rest {
		hist[r/bucket]++
		distinct[r.Truncate(time.Millisecond)] = true
	}
	busiest := 0
	for _, v := range hist {
		busiest = max(busiest, v)
	}
	if busiest > 20 || len(distinct) < 150 || rest[len(rest)-1]-rest[0] < 1500*time.Millisecond {
		t.Fatalf("releases bunched: busiest %v bucket %d, %d distinct ms, span %v\n%s",
			bucket, busiest, len(distinct), rest[len(rest)-1]-rest[0], histogram(rest, bucket))
	}
	t.Logf("%d sessions: %d provider attempts during the outage beyond the %d first prompts (all probes); "+
		"releases after close: span %v, busiest %v bucket %d\n%s",
		n, len(probes), n, rest[len(rest)-1]-rest[0], bucket, busiest, histogram(rest, 250*time.Millisecond))
}

// TestStampedeWithoutCircuits is the baseline the circuit removes: the same
// sessions with circuits off hit the provider on every schedule.
func TestStampedeWithoutCircuits(t *testing.T) {
	s := runStampede(t, []*Circuits{New(Config{})}, 200, 8, 47*time.Second)
	retries := 0
	for _, a := range s.attempts {
		if a.kind != "initial" && a.start.Before(s.outageEnd) {
			retries++
		}
	}
	if retries < 200*4 {
		t.Fatalf("baseline: %d retries during the outage, want ≥ 800 (five schedules' worth)", retries)
	}
	t.Logf("circuits off: %d retries reached the provider during the outage", retries)
}

func histogram(ds []time.Duration, bucket time.Duration) string {
	counts := map[time.Duration]int{}
	var keys []time.Duration
	for _, d := range ds {
		b := d / bucket
		if counts[b] == 0 {
			keys = append(keys, b)
		}
		counts[b]++
	}
	slices.Sort(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "  %6v %s %d\n", k*bucket, strings.Repeat("#", counts[k]), counts[k])
	}
	return sb.String()
}
