package kvstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/acp-guard/acp-guard/internal/natstest"
)

// A swap whose answer was lost is settled by reading the key: stored with
// its value past its revision — done; still at its revision — not done;
// changed otherwise — a conflict (re-read and decide again); unreadable —
// the error stands. Never a second write.
func TestReadBackSettlesUnknownOutcome(t *testing.T) {
	lost := context.DeadlineExceeded
	for _, c := range []struct {
		name   string
		cur    []byte
		curRev uint64
		getErr error
		rev    uint64
		want   error
	}{
		{"landed", []byte("mine"), 8, nil, 7, nil},
		{"landed create", []byte("mine"), 3, nil, 0, nil},
		{"not landed", []byte("old"), 7, nil, 7, lost},
		{"create not landed", nil, 0, nil, 0, lost},
		{"another writer", []byte("theirs"), 8, nil, 7, ErrConflict},
		{"deleted meanwhile", nil, 0, nil, 7, ErrConflict},
		{"unreadable", nil, 0, errors.New("no quorum"), 7, lost},
	} {
		calls := 0
		err := readBack(lost, []byte("mine"), c.rev, func() ([]byte, uint64, error) {
			calls++
			return c.cur, c.curRev, c.getErr
		})
		if !errors.Is(err, c.want) && (c.want != nil || err != nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if calls != 1 {
			t.Errorf("%s: %d reads, want 1", c.name, calls)
		}
	}
	if !unknownOutcome(fmt.Errorf("nats put: %w", context.DeadlineExceeded)) || unknownOutcome(ErrConflict) {
		t.Error("unknownOutcome: a timeout is unknown, a conflict is an answer")
	}
}

// On a three-server cluster the store creates its bucket at R3, and
// read-modify-swap loops that read before every retry (as circuit.update
// does) never apply one change twice while the stream's leader is killed
// and started again: every change reported done is stored, none twice.
func TestNATSClusterLeaderLossNeverDoubleCounts(t *testing.T) {
	c := natstest.StartCluster(t)
	s := openNATS(t, c.URLs(), NATSOptions{Bucket: "cluster_a", TTL: time.Hour, MaxValue: 64 << 10})
	if err := s.CompareAndSwap(ctx, "k.count", []byte(""), 0); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(s.Conn())
	info, err := js.Stream(ctx, "KV_cluster_a")
	if err != nil {
		t.Fatal(err)
	}
	if r := info.CachedInfo().Config.Replicas; r != ClusterReplicas || info.CachedInfo().Config.AllowDirect {
		t.Fatalf("bucket created at R%d (direct gets %v) on a cluster, want R%d, reads from the leader",
			r, info.CachedInfo().Config.AllowDirect, ClusterReplicas)
	}
	const workers, each = 4, 25
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := map[string]bool{}
	half := make(chan struct{})
	var halfOnce sync.Once
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				tok := fmt.Sprintf("w%d.%d", w, i)
				if w == 0 && i == each/2 {
					halfOnce.Do(func() { close(half) })
				}
				for try := 0; try < 400; try++ { // a hang guard
					cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					v, rev, err := s.Get(cctx, "k.count")
					if err == nil && slices.Contains(strings.Fields(string(v)), tok) {
						cancel()
						break // landed earlier under an error: not again
					}
					if err == nil {
						err = s.CompareAndSwap(cctx, "k.count", []byte(string(v)+" "+tok), rev)
					}
					cancel()
					if err == nil {
						mu.Lock()
						done[tok] = true
						mu.Unlock()
						break
					}
					time.Sleep(10 * time.Millisecond) // contention or a leader election: read again
				}
			}
		}()
	}
	<-half
	leader := c.WaitStreamLeader("KV_cluster_a")
	c.Stop(leader)
	c.Restart(leader, true)
	wg.Wait()
	v, _, err := s.Get(ctx, "k.count")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, tok := range strings.Fields(string(v)) {
		seen[tok]++
		if seen[tok] > 1 {
			t.Errorf("change %s stored twice", tok)
		}
	}
	for tok := range done {
		if seen[tok] == 0 {
			t.Errorf("change %s reported done but not stored", tok)
		}
	}
	if len(seen) != workers*each {
		t.Errorf("%d changes stored, want %d", len(seen), workers*each)
	}
}

// A server cut off from the majority serves no write: a swap through it
// fails (an error, not a conflict), and once the cluster is whole again
// the value is the one before — the minority changed nothing.
func TestNATSClusterMinorityWritesNothing(t *testing.T) {
	c := natstest.StartCluster(t)
	maj := openNATS(t, c.URLs(), NATSOptions{Bucket: "cluster_b", TTL: time.Hour, MaxValue: 1024})
	if err := maj.CompareAndSwap(ctx, "k.1", []byte("majority"), 0); err != nil {
		t.Fatal(err)
	}
	_, rev, err := maj.Get(ctx, "k.1")
	if err != nil {
		t.Fatal(err)
	}
	min := openNATS(t, c.URL(2), NATSOptions{Bucket: "cluster_b", TTL: time.Hour, MaxValue: 1024})
	if _, _, err := min.Get(ctx, "k.1"); err != nil {
		t.Fatal(err)
	}
	c.Stop(0)
	c.Stop(1)
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = min.CompareAndSwap(cctx, "k.1", []byte("minority"), rev)
	cancel()
	if err == nil || errors.Is(err, ErrConflict) {
		t.Fatalf("swap through a server without quorum: %v, want a failure", err)
	}
	c.Restart(0, true)
	c.Restart(1, true)
	c.WaitStreamLeader("KV_cluster_b")
	for try := 0; ; try++ { // the cluster elects; a hang guard of 30 s
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, _, err := maj.Get(cctx, "k.1")
		cancel()
		if err == nil {
			if string(v) != "majority" {
				t.Fatalf("after healing the value is %q, want the majority's", v)
			}
			break
		}
		if try > 300 {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
