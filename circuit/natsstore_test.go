package circuit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/acp-guard/acp-guard/internal/natstest"
)

func openNATS(t testing.TB, url string, extra ...nats.Option) Store {
	t.Helper()
	s, err := OpenStore(url, Options{Extra: extra})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestNATSStoreCompareAndSwap(t *testing.T) {
	ns := natstest.Start(t)
	s := openNATS(t, ns.URL())
	id := "ns.default.0123"
	rec := Record{Key: Key{Namespace: "default", Provider: "p", Scope: "provider"}, Failures: 1}
	if err := s.CompareAndSwap(ctx, id, rec, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.CompareAndSwap(ctx, id, rec, 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("create over an existing record: %v, want ErrConflict", err)
	}
	got, rev, err := s.Get(ctx, id)
	if err != nil || got.Failures != 1 || got.Version != RecordVersion || rev == 0 {
		t.Fatalf("Get = %+v, %d, %v", got, rev, err)
	}
	rec.Failures = 2
	if err := s.CompareAndSwap(ctx, id, rec, rev); err != nil {
		t.Fatal(err)
	}
	if err := s.CompareAndSwap(ctx, id, rec, rev); !errors.Is(err, ErrConflict) {
		t.Fatalf("update at a stale revision: %v, want ErrConflict", err)
	}
	if recs, err := s.List(ctx); err != nil || len(recs) != 1 || recs[0].Failures != 2 {
		t.Fatalf("List = %+v, %v", recs, err)
	}
	if err := s.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got, rev, err := s.Get(ctx, id); got != nil || rev != 0 || err != nil {
		t.Fatalf("Get after Delete = %+v, %d, %v", got, rev, err)
	}
	if err := s.CompareAndSwap(ctx, id, rec, 0); err != nil {
		t.Fatalf("create over a deleted key: %v", err)
	}
	// The bucket keeps one revision per key and expires untouched keys.
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, _ := js.KeyValue(ctx, DefaultBucket)
	// A value someone else wrote that is not a version-1 record: refused,
	// skipped by List, and a turn on that key proceeds.
	foreign := Key{Provider: "foreign", Scope: "provider"}
	fk, _ := foreign.Normalize()
	if _, err := kv.Put(ctx, fk.ID(), []byte(`{"v":2,"shape":"new"}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, fk.ID()); !errors.Is(err, ErrFormat) {
		t.Fatalf("Get of a foreign value: %v, want ErrFormat", err)
	}
	if recs, err := s.List(ctx); err != nil || len(recs) != 1 {
		t.Fatalf("List with a foreign value = %+v, %v; want the one record", recs, err)
	}
	if d, err := newTest(t, s).Acquire(ctx, foreign, "a", t0); d.Action != Go || !errors.Is(err, ErrFormat) {
		t.Fatalf("Acquire on a foreign value = %+v, %v; want go with ErrFormat", d, err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.TTL() != DefaultBucketTTL || st.History() != 1 {
		t.Fatalf("bucket status ttl=%v history=%d err=%v", st.TTL(), st.History(), err)
	}
}

// TestNATSStoreTwoMachinesShareOneCircuit: two clients (two machines)
// see one circuit; at the cooldown's end their sessions race and exactly
// one probes; its progress releases the others.
func TestNATSStoreTwoMachinesShareOneCircuit(t *testing.T) {
	ns := natstest.Start(t)
	machines := []*Circuits{newTest(t, openNATS(t, ns.URL())), newTest(t, openNATS(t, ns.URL()))}
	cool := t0.Add(10 * time.Second)
	mustFail(t, machines[0], transient(cool), "m0/s0", t0)
	d := mustAcquire(t, machines[1], "m1/s0", t0.Add(time.Second), Park)
	if d.Wait != WaitCooldown || !d.Circuit.CooldownUntil.Equal(cool) {
		t.Fatalf("machine 1 parks %v, cooldown until %v; want the cooldown until %v", d.Wait, d.Circuit.CooldownUntil, cool)
	}
	var mu sync.Mutex
	var probes []string
	var wg sync.WaitGroup
	for m, c := range machines {
		for s := range 8 {
			holder := fmt.Sprintf("m%d/s%d", m, s)
			wg.Go(func() {
				d, err := c.Acquire(ctx, testKey, holder, cool)
				if err != nil {
					t.Errorf("%s: %v", holder, err)
				}
				if d.Action == Probe {
					mu.Lock()
					probes = append(probes, holder)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(probes) != 1 {
		t.Fatalf("probes granted to %v, want exactly one", probes)
	}
	var prober, other *Circuits = machines[0], machines[1]
	if probes[0][1] == '1' {
		prober, other = other, prober
	}
	if _, err := prober.Progress(ctx, testKey, cool.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, other, "m9/s9", cool.Add(5*time.Second), Go)
}

func TestNATSStoreLeaseTakeoverAfterTTL(t *testing.T) {
	ns := natstest.Start(t)
	a, b := newTest(t, openNATS(t, ns.URL())), newTest(t, openNATS(t, ns.URL()))
	mustFail(t, a, backoff(time.Second), "a", t0.Add(-time.Second))
	p := mustAcquire(t, a, "a", t0, Probe)
	if _, err := a.Refresh(ctx, testKey, "a", t0.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, b, "b", t0.Add(45*time.Second), Park) // refreshed past the first TTL
	// Machine a crashes: no more refreshes. Once the lease runs out, b takes over.
	q := mustAcquire(t, b, "b", t0.Add(50*time.Second), Probe)
	if q.Lease.Holder != "b" || !q.Lease.GrantedAt.After(p.Lease.GrantedAt) {
		t.Fatalf("takeover lease %+v", q.Lease)
	}
	if _, err := a.Refresh(ctx, testKey, "a", t0.Add(51*time.Second)); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Refresh by the old holder: %v, want ErrLeaseLost", err)
	}
}

// TestNATSStoreServerGoesAway: with the server gone a turn is decided at
// once on the process's last view (ErrStore, no waiting; Go, as if there
// were no circuit, once the view is older than LeaseTTL); once a restarted server
// is back, the circuit it kept applies again.
func TestNATSStoreServerGoesAway(t *testing.T) {
	ns := natstest.Start(t)
	reconnected, disconnected := make(chan struct{}, 1), make(chan struct{}, 1)
	note := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	st := openNATS(t, ns.URL(), nats.ReconnectWait(20*time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) { note(reconnected) }),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { note(disconnected) }))
	c := New(Config{Store: st, StoreRetry: 30 * time.Second, OpTimeout: 2 * time.Minute}) // hang guard
	mustFail(t, c, transient(t0.Add(time.Hour)), "a", t0)
	ns.Stop()
	<-disconnected // the client noticed (the test's own timeout is the hang guard)
	d, err := c.Acquire(ctx, testKey, "b", t0.Add(time.Second))
	if !errors.Is(err, ErrStore) || d.Action != Park || d.Wait != WaitCooldown {
		t.Fatalf("Acquire with the server gone = %+v, %v; want park on the last view and ErrStore", d, err)
	}
	if d, err := c.Acquire(ctx, testKey, "c", t0.Add(DefaultLeaseTTL+2*time.Second)); !errors.Is(err, ErrStore) || d.Action != Go {
		t.Fatalf("Acquire with the server gone, the view older than LeaseTTL = %+v, %v; want go and ErrStore", d, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire waited for its timeout: %v; want an immediate failure while disconnected", err)
	}
	if _, err := c.Fail(ctx, testKey, transient(t0.Add(time.Hour)), "b", t0.Add(2*time.Second)); !errors.Is(err, ErrStore) {
		t.Fatalf("Fail with the server gone: %v", err)
	}

	natstest.StartAt(t, ns.Port, ns.Dir) // same port, same store directory
	select {
	case <-reconnected:
	case <-time.After(60 * time.Second): // hang guard only
		t.Fatal("client did not reconnect")
	}
	// The reconnect ends the store's backoff at once, and the circuit
	// survived.
	mustAcquire(t, c, "b", t0.Add(2500*time.Millisecond), Park)
}

// TestNATSStoreServerLosesItsStore: a server restarted without its store
// directory has no bucket; the store creates it again on the next
// operation, and sharing resumes.
func TestNATSStoreServerLosesItsStore(t *testing.T) {
	ns := natstest.Start(t)
	reconnected := make(chan struct{}, 1)
	st := openNATS(t, ns.URL(), nats.ReconnectWait(20*time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) {
			select {
			case reconnected <- struct{}{}:
			default:
			}
		}))
	c := New(Config{Store: st, OpTimeout: 2 * time.Minute}) // hang guard
	mustFail(t, c, backoff(time.Hour), "a", t0)
	ns.Stop()
	natstest.StartAt(t, ns.Port, t.TempDir()) // same port, empty store
	select {
	case <-reconnected:
	case <-time.After(60 * time.Second): // hang guard only
		t.Fatal("client did not reconnect")
	}
	// The first operation may find the old binding gone; a later one
	// (after the store's backoff) binds, creating the bucket, and shares
	// again.
	var err error
	for i := range 3 {
		at := t0.Add(time.Duration(i) * time.Minute)
		if _, err = c.Fail(ctx, testKey, backoff(time.Hour), "b", at); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("Fail after the server lost its store: %v", err)
	}
	mustAcquire(t, c, "c", t0.Add(3*time.Minute), Park)
}

// TestNATSStoreUnreachableAtStart: a configured server that is not there
// is not an error at start, and turns proceed.
func TestNATSStoreUnreachableAtStart(t *testing.T) {
	c := newTest(t, openNATS(t, natstest.DeadURL(t)))
	d, err := c.Acquire(ctx, testKey, "a", t0)
	if !errors.Is(err, ErrStore) || d.Action != Go {
		t.Fatalf("Acquire = %+v, %v; want go and ErrStore", d, err)
	}
}

// TestOnlyAReplicatedStorePings: a store over NATS is a Pinger (a late
// call on it is told from a lost one, and a swap lost to a write in
// flight is waited for); the file and memory stores are not.
func TestOnlyAReplicatedStorePings(t *testing.T) {
	ns := natstest.Start(t)
	if _, ok := openNATS(t, ns.URL()).(Pinger); !ok {
		t.Error("the NATS store is not a Pinger")
	}
	file, err := OpenStore("file", Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for name, s := range map[string]Store{"file": file, "memory": NewMemoryStore()} {
		if _, ok := s.(Pinger); ok {
			t.Errorf("the %s store is a Pinger", name)
		}
	}
}
