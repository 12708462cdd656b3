package circuit

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/acp-guard/acp-guard/internal/natstest"
)

// The rules of docs/CIRCUITS.md ("On a NATS cluster") against a real
// three-server JetStream cluster: a session whose server lost the
// majority decides on its own schedule at once (Go with ErrStore, never a
// wait), opens and closes nothing for the majority, and uses the store
// again at the latest StoreRetry after the cluster is whole (at once when
// its connection came back).
func TestClusterMinorityDecidesLocallyChangesNothingResumes(t *testing.T) {
	c := natstest.StartCluster(t)
	majority := New(Config{Store: openNATS(t, c.URLs()), Seed: 1})
	// The minority's session talks to server 2 only (it learns no other
	// server from the cluster), as a host cut off with its server would.
	minStore := openNATS(t, c.URL(2), nats.IgnoreDiscoveredServers(), nats.DontRandomize())
	const retry = 4 * time.Second
	minority := New(Config{Store: minStore, Seed: 2, StoreRetry: retry})
	now := time.Now()
	open, closed := clusterKey("model-open"), clusterKey("model-closed")
	f := Failure{Class: "transient", Code: "provider_unavailable", Backoff: 10 * time.Second}
	if _, err := majority.Fail(ctx, open, f, "maj/1", now); err != nil {
		t.Fatal(err)
	}
	before, _, err := majority.Get(ctx, open, now)
	if err != nil || before == nil {
		t.Fatalf("the majority's circuit: %+v, %v", before, err)
	}
	if _, _, err := minority.Get(ctx, open, now); err != nil { // the minority saw it once: its view, now stale
		t.Fatal(err)
	}
	// The minority's server leads the bucket's stream when it loses the
	// others (the hard case: it takes writes into its log it cannot
	// commit, and may commit them once it leads a whole cluster again).
	c.LeadStream("KV_"+DefaultBucket, 2)
	c.Stop(0)
	c.Stop(1)

	// Every operation of the minority answers, with the local decision.
	// Its cooldown over (in the minority's view), the minority's session
	// would take the probe lease: the write cannot reach a quorum, and
	// the session parks one poll on its view instead of probing for the
	// others (it never waits for the store: the answer is immediate).
	t0 := now.Add(11 * time.Second)
	d, err := minority.Acquire(ctx, open, "min/1", t0)
	if !errors.Is(err, ErrStore) || d.Action != Park || d.Wait != WaitProbe || !d.Until.After(t0) ||
		d.Until.After(t0.Add(DefaultParkPoll)) {
		t.Fatalf("minority Acquire on its view: %+v, %v; want Park behind a probe within a poll, with ErrStore", d, err)
	}
	// A circuit it never saw: Go. (The store is left alone after that
	// failure — "skipped" — unless the failure said it was only not
	// settled, kvstore.ErrUnsettled: then it is asked, and a server that
	// led the stream when it lost the majority may still answer a read,
	// with nothing there: Go all the same.)
	if d, err := minority.Acquire(ctx, closed, "min/1", t0); (err != nil && !errors.Is(err, ErrStore)) || d.Action != Go {
		t.Fatalf("minority Acquire without a view: %v, %v; want Go (with ErrStore)", d.Action, err)
	}
	// The writes fail — with ErrStore, or, on such a stale leader whose
	// own unreplicated write is in the way, ErrContended — and change
	// nothing (checked after healing).
	unwritten := func(err error) bool { return errors.Is(err, ErrStore) || errors.Is(err, ErrContended) }
	if _, err := minority.Progress(ctx, open, t0); !unwritten(err) {
		t.Fatalf("minority Progress (closing the majority's circuit): %v, want ErrStore or ErrContended", err)
	}
	if _, err := minority.Fail(ctx, closed, f, "min/1", t0); !unwritten(err) {
		t.Fatalf("minority Fail (opening a circuit): %v, want ErrStore or ErrContended", err)
	}
	// Left alone after the failure, the next calls are answered at once
	// without asking the store ("skipped"; asked again at once only after
	// an ErrUnsettled), on the view: Park.
	d, err = minority.Acquire(ctx, open, "min/2", t0.Add(100*time.Millisecond))
	if !unwritten(err) || d.Action != Park {
		t.Fatalf("minority Acquire while left alone: %v, %v; want Park on its view", d.Action, err)
	}
	last := now.Add(DefaultLeaseTTL + time.Second)
	// A view older than LeaseTTL is no guide: the session goes on its
	// own schedule, as without circuits. (A server that led the stream
	// when it lost the majority may still answer the swap with a
	// conflict, its own unreplicated write in the way, until it steps
	// down: then the session parks one poll, as on any contention.)
	d, err = minority.Acquire(ctx, open, "min/1", last)
	if !(errors.Is(err, ErrStore) && d.Action == Go) && !(errors.Is(err, ErrContended) && d.Action == Park) {
		t.Fatalf("minority Acquire on a view older than LeaseTTL: %v, %v; want Go with ErrStore", d.Action, err)
	}

	c.Restart(0, true)
	c.Restart(1, true)
	c.WaitStreamLeader("KV_" + DefaultBucket)
	// At StoreRetry after the last failure the store is asked again (not
	// skipped); then, once the cluster answers, sharing has resumed.
	at := last.Add(retry)
	for try := 0; ; try++ { // a hang guard of ~60 s while the cluster settles
		_, _, err := minority.Get(ctx, open, at)
		if err == nil {
			break
		}
		if strings.Contains(err.Error(), "skipped") && try == 0 {
			t.Fatalf("store still skipped %v after the last failure (StoreRetry %v): %v", at.Sub(last), retry, err)
		}
		if try > 60 {
			t.Fatal(err)
		}
		at = at.Add(retry)
		time.Sleep(time.Second)
	}
	// A swap of the minority that its server took into its log while it
	// still thought it led (a timeout for the session, "not done" on the
	// read back) may be committed now that the cluster elected that
	// server again: the minority's next operation on the key takes it
	// back (doubt.go).
	if _, _, err := minority.Get(ctx, closed, at); err != nil {
		t.Fatal(err)
	}
	after, _, err := majority.Get(ctx, open, now)
	if err != nil || after == nil {
		t.Fatalf("after healing: %+v, %v", after, err)
	}
	if after.StateAt(now) != StateOpen || after.Lease != nil || !after.OpenUntil.Equal(before.OpenUntil) || after.Failures != before.Failures {
		t.Fatalf("the minority changed the majority's circuit: before %+v, after %+v", before, after)
	}
	if rec, _, err := majority.Get(ctx, closed, now); err != nil || (rec != nil && (rec.OpenAt(now) || rec.Failures != 0)) {
		t.Fatalf("the minority opened a circuit: %+v, %v", rec, err)
	}
}

// While the bucket's stream leader is killed and another elected, no
// operation of any session hangs: each answers within the store call's
// timeout with a decision, and the store answers again once a leader is
// elected. A decision taken without the store (ErrStore) follows the
// process's last view of the circuit (Circuits.local): it never probes;
// while the view (open) is younger than the lease TTL it parks, after that
// it goes on its own schedule.
func TestClusterLeaderLossNeverBlocks(t *testing.T) {
	c := natstest.StartCluster(t)
	cs := New(Config{Store: openNATS(t, c.URLs()), Seed: 3, MaxOpTimeout: 2 * time.Second})
	key := clusterKey("m")
	now := time.Now()
	if _, err := cs.Fail(ctx, key, Failure{Class: "transient", Code: "provider_unavailable", Backoff: time.Second}, "s/0", now); err != nil {
		t.Fatal(err)
	}
	leader := c.WaitStreamLeader("KV_" + DefaultBucket)
	c.Stop(leader)
	c.Restart(leader, true)
	done := make(chan error, 1)
	go func() {
		var last error
		for i := range 50 {
			age := time.Duration(i) * 10 * time.Second
			d, err := cs.Acquire(ctx, key, "s/1", now.Add(age))
			if err != nil {
				want := Park
				if age > DefaultLeaseTTL {
					want = Go
				}
				if d.Action != want {
					done <- fmt.Errorf("without the store, on a view %v old: %v, want %v", age, d.Action, want)
					return
				}
			}
			if last = err; err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		done <- last
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("no answer from the store after a new leader: %v", err)
		}
	case <-time.After(2 * time.Minute): // a hang guard, not an oracle
		t.Fatal("operations hung while the leader moved")
	}
}

func clusterKey(model string) Key {
	return Key{Namespace: "cluster", Provider: "codex-acp", Model: model, Scope: "provider"}
}
