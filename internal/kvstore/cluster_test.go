package kvstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
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

// stallProxy forwards TCP connections to target until stall is called;
// from then on it forwards nothing and closes nothing: a network cut
// off without a reset, as a pulled cable is.
type stallProxy struct {
	l       net.Listener
	stalled atomic.Bool
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{l: l}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); u.Close() })
			pipe := func(dst, src net.Conn) {
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					if err != nil {
						return
					}
					if p.stalled.Load() {
						continue // swallowed
					}
					if _, err := dst.Write(buf[:n]); err != nil {
						return
					}
				}
			}
			go pipe(u, c)
			go pipe(c, u)
		}
	}()
	return p
}

// A call that timed out on a connection that stalled (no answer, not
// even to a ping) makes the client reconnect at once to the next server
// of its list, instead of waiting for TCP to retransmit into a network
// that healed long ago; a server that is merely slow keeps its client.
func TestNATSStalledConnectionReconnects(t *testing.T) {
	srv := natstest.Start(t)
	p := newStallProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.Port))
	url := "nats://" + p.l.Addr().String() + "," + srv.URL()
	nc, err := DialNATS(url, "test", nats.DontRandomize(), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s := openNATS(t, "", NATSOptions{Conn: nc, Bucket: "stall", TTL: time.Hour, MaxValue: 1024})
	if err := s.CompareAndSwap(ctx, "k.1", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if got := nc.ConnectedUrl(); !strings.Contains(got, p.l.Addr().String()) {
		t.Fatalf("connected to %s, want the proxy first", got)
	}
	p.stalled.Store(true)
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, _, err = s.Get(cctx, "k.1")
	cancel()
	if !unknownOutcome(err) {
		t.Fatalf("Get through a stalled connection: %v, want a timeout", err)
	}
	for try := 0; s.Reconnects() == 0; try++ { // hang guard ~30 s
		if try > 600 {
			t.Fatal("no reconnect after a call timed out on a stalled connection")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if v, _, err := s.Get(ctx, "k.1"); err != nil || string(v) != "v" {
		t.Fatalf("after the reconnect: %q, %v", v, err)
	}
}

// A server that answers "JetStream system temporarily unavailable" (not
// current with its cluster: rejoining after a partition) is left for the
// next server of the list, at most once per leaveEvery.
func TestNATSUnavailableServerIsLeft(t *testing.T) {
	a, b := natstest.Start(t), natstest.Start(t)
	nc, err := DialNATS(a.URL()+","+b.URL(), "test", nats.DontRandomize(), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s := openNATS(t, "", NATSOptions{Conn: nc, Bucket: "leave", TTL: time.Hour, MaxValue: 1024})
	if nc.ConnectedUrl() != a.URL() {
		t.Fatalf("connected to %s, want %s first", nc.ConnectedUrl(), a.URL())
	}
	unavailable := &jetstream.APIError{Code: 503, ErrorCode: clusterUnavailable, Description: "JetStream system temporarily unavailable"}
	_ = s.failed("get", fmt.Errorf("wrapped: %w", unavailable))
	for try := 0; s.Reconnects() == 0 || !nc.IsConnected(); try++ { // hang guard ~30 s
		if try > 600 {
			t.Fatal("the client stayed on a server not current with its cluster")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if nc.ConnectedUrl() != b.URL() {
		t.Fatalf("moved to %s, want the next server %s", nc.ConnectedUrl(), b.URL())
	}
	_ = s.failed("get", unavailable) // within leaveEvery: stays
	if got := s.Reconnects(); got != 1 {
		t.Fatalf("%d reconnects after a second answer within %v, want 1", got, leaveEvery)
	}
}

// A store error that says nothing was stored and a leader answers in a
// moment — no responders (a stream electing its leader), a server not
// current with its cluster — wraps ErrUnsettled (the caller asks again at
// once); a timeout, whose outcome is unknown, and an answer do not.
func TestUnsettledErrors(t *testing.T) {
	s := openNATS(t, natstest.Start(t).URL(), NATSOptions{Bucket: "unsettled", TTL: time.Hour, MaxValue: 1024})
	s.left.Store(time.Now().UnixNano()) // no leaveServer reconnect in this test
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nats.ErrNoResponders, true},
		{jetstream.ErrNoStreamResponse, true},
		{&jetstream.APIError{Code: 503, ErrorCode: clusterUnavailable, Description: "JetStream system temporarily unavailable"}, true},
		{context.DeadlineExceeded, false},
		{nats.ErrTimeout, false},
		{&jetstream.APIError{Code: 400, ErrorCode: 10071, Description: "wrong last sequence"}, false},
		{ErrConflict, false},
	} {
		err := s.failed("get", fmt.Errorf("wrapped: %w", c.err))
		if got := errors.Is(err, ErrUnsettled); got != c.want || !errors.Is(err, c.err) {
			t.Errorf("%v: %v (unsettled %v), want unsettled %v and the error kept", c.err, err, got, c.want)
		}
	}
}

// scripted is a server without JetStream where the test answers the
// bucket's message gets itself, as the servers of a cluster would.
func scripted(t *testing.T) (*NATS, *nats.Conn) {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(srv.Shutdown)
	s := openNATS(t, srv.ClientURL(), NATSOptions{Bucket: "scripted", TTL: time.Hour, MaxValue: 1024})
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return s, nc
}

const (
	getSubject  = "$JS.API.STREAM.MSG.GET.KV_scripted"
	answerValue = `{"type":"io.nats.jetstream.api.v1.stream_msg_get_response","message":{"subject":"$KV.scripted.k.1","seq":7,"data":"dg==","time":"2026-12-02T00:00:00Z"}}`
	answerBusy  = `{"type":"io.nats.jetstream.api.v1.stream_msg_get_response","error":{"code":503,"err_code":10008,"description":"JetStream system temporarily unavailable"}}`
)

// respond answers every get on nc with fn's reply ("" : none), fn told
// the request's number (from 1).
func respond(t *testing.T, nc *nats.Conn, fn func(n int) string) {
	t.Helper()
	var n atomic.Int64
	sub, err := nc.Subscribe(getSubject, func(m *nats.Msg) {
		if reply := fn(int(n.Add(1))); reply != "" {
			_ = m.Respond([]byte(reply))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// A read whose answer did not come within half its time is sent again (a
// read changes nothing): the second request's answer is the value.
func TestNATSLostReadIsSentAgain(t *testing.T) {
	s, nc := scripted(t)
	var requests atomic.Int64
	respond(t, nc, func(n int) string {
		requests.Store(int64(n))
		if n == 1 {
			return "" // lost
		}
		return answerValue
	})
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	e, err := s.read(cctx, "k.1")
	if err != nil || string(e.value) != "v" || e.rev != 7 {
		t.Fatalf("a read whose first answer was lost: %q rev %d, %v; want the value from the second request", e.value, e.rev, err)
	}
	if requests.Load() != 2 {
		t.Fatalf("%d requests, want 2", requests.Load())
	}
}

// A read whose requests keep being lost (a server cut off from its
// cluster answers pings but forwards nothing) is sent again at each
// resendAfter, not once: the first request sent after the cluster heals
// is answered, long before the read's time is up.
func TestNATSReadIsSentAgainUntilAnswered(t *testing.T) {
	s, nc := scripted(t)
	var requests atomic.Int64
	respond(t, nc, func(n int) string {
		requests.Store(int64(n))
		if n <= 2 {
			return "" // lost: the first two (at 0 and 2 s)
		}
		return answerValue
	})
	cctx, cancel := context.WithTimeout(ctx, 8*time.Second) // a slow store's budget
	defer cancel()
	e, err := s.read(cctx, "k.1")
	if err != nil || string(e.value) != "v" {
		t.Fatalf("a read whose first two requests were lost: %q, %v; want the value from the third", e.value, err)
	}
	if requests.Load() != 3 {
		t.Fatalf("%d requests, want 3", requests.Load())
	}
}

// The resend schedule: half of what is left, at most resendEvery, none
// below minResend; so a read of any length is sent a bounded number of
// times and never waits more than resendEvery between requests.
func TestResendAfter(t *testing.T) {
	for _, left := range []time.Duration{0, 50 * time.Millisecond, time.Second, 2 * time.Second, 8 * time.Second, 30 * time.Second} {
		sends, gap := 1, time.Duration(0)
		for l := left; ; sends++ {
			d, ok := resendAfter(l)
			if !ok {
				break
			}
			gap = max(gap, d)
			l -= d
		}
		if gap > resendEvery || sends > 1+int(left/resendEvery)+4 {
			t.Fatalf("a read of %v: %d requests, longest gap %v; want gaps of at most %v and a bounded count", left, sends, gap, resendEvery)
		}
	}
	if d, ok := resendAfter(8 * time.Second); !ok || d != resendEvery {
		t.Fatalf("resendAfter(8s) = %v, %v; want %v", d, ok, resendEvery)
	}
	if _, ok := resendAfter(150 * time.Millisecond); ok {
		t.Fatal("a read with 150 ms left is sent again; want not (its answer could not arrive)")
	}
}

// One server of the cluster that does not know the leader answers every
// read at once "temporarily unavailable"; the leader's answer, after
// it, is the one taken. Only such answers, and no leader's within
// unsettledGrace: the error, which Get reports as ErrUnsettled.
func TestNATSLaggingServerDoesNotFailReads(t *testing.T) {
	s, nc := scripted(t)
	busyAnswered := make(chan struct{}, 16)
	sub, err := nc.Subscribe(getSubject, func(m *nats.Msg) {
		_ = m.Respond([]byte(answerBusy))
		_ = nc.Flush() // the server has it: it reaches the reader before the leader's
		busyAnswered <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	leader, err := nats.Connect(nc.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(leader.Close)
	var leaderUp atomic.Bool
	leaderUp.Store(true)
	respond(t, leader, func(int) string {
		<-busyAnswered // the lagging server's answer first
		if !leaderUp.Load() {
			return ""
		}
		return answerValue
	})
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	e, err := s.read(cctx, "k.1")
	cancel()
	if err != nil || string(e.value) != "v" {
		t.Fatalf("read with a lagging server answering first: %q, %v; want the leader's value", e.value, err)
	}
	leaderUp.Store(false) // no leader now: the lagging server's answer stands
	cctx, cancel = context.WithTimeout(ctx, 10*time.Second)
	_, err = s.read(cctx, "k.1")
	over := cctx.Err()
	cancel()
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != clusterUnavailable || over != nil {
		t.Fatalf("read with only the lagging server: %v (call's time over: %v); want its error within the grace", err, over)
	}
	if err := s.failed("get", err); !errors.Is(err, ErrUnsettled) {
		t.Fatalf("reported as %v, want ErrUnsettled", err)
	}
}

// The answers a read takes as the JetStream client does: no message —
// not found; a delete or purge marker — deleted; nobody listening — no
// responders.
func TestNATSReadAnswers(t *testing.T) {
	s, nc := scripted(t)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.read(cctx, "k.1"); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("nobody listening: %v, want no responders", err)
	}
	answer := `{"error":{"code":404,"err_code":10037,"description":"no message found"}}`
	var mu sync.Mutex
	respond(t, nc, func(int) string { mu.Lock(); defer mu.Unlock(); return answer })
	if _, err := s.read(cctx, "k.1"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("no message: %v, want ErrKeyNotFound", err)
	}
	mu.Lock()
	answer = `{"message":{"subject":"$KV.scripted.k.1","seq":9,"hdrs":"TkFUUy8xLjANCktWLU9wZXJhdGlvbjogREVMDQoNCg=="}}` // KV-Operation: DEL
	mu.Unlock()
	if _, err := s.read(cctx, "k.1"); !errors.Is(err, jetstream.ErrKeyDeleted) {
		t.Fatalf("a delete marker: %v, want ErrKeyDeleted", err)
	}
}
