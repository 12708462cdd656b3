package kvstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/acp-guard/acp-guard/internal/natstest"
)

// signal is a channel a NATS handler notes an event on without blocking.
func signal() (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	return ch, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// twoBuckets opens the circuits' and the held prompts' buckets on one
// shared connection with a short reconnect wait; reconnected is noted on
// every reconnect.
func twoBuckets(t *testing.T, url string) (nc *nats.Conn, a, b *NATS, reconnected, disconnected chan struct{}) {
	t.Helper()
	reconnected, onReconnect := signal()
	disconnected, onDisconnect := signal()
	nc, err := DialNATS(url, "test", nats.ReconnectWait(20*time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) { onReconnect() }),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { onDisconnect() }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	a = openNATS(t, "", NATSOptions{Conn: nc, Bucket: "bucket_a", TTL: time.Hour, MaxValue: 1024, Description: "a"})
	b = openNATS(t, "", NATSOptions{Conn: nc, Bucket: "bucket_b", TTL: 2 * time.Hour, MaxValue: 2048})
	return nc, a, b, reconnected, disconnected
}

// Two buckets share one connection; closing them leaves it to its owner.
// A store that dialled its own closes it.
func TestNATSSharedConnection(t *testing.T) {
	srv := natstest.Start(t)
	nc, a, b, _, _ := twoBuckets(t, srv.URL())
	for _, s := range []*NATS{a, b} {
		if err := s.CompareAndSwap(ctx, "k.1", []byte(`1`), 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Clients(); n != 1 {
		t.Fatalf("%d client connections for two buckets, want 1", n)
	}
	js, _ := jetstream.New(nc)
	for _, want := range []struct {
		bucket string
		ttl    time.Duration
		max    int32
	}{{"bucket_a", time.Hour, 1024}, {"bucket_b", 2 * time.Hour, 2048}} {
		kv, err := js.KeyValue(ctx, want.bucket)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil || st.TTL() != want.ttl || st.History() != 1 || st.Config().MaxValueSize != want.max {
			t.Fatalf("%s: ttl=%v history=%d max=%d err=%v", want.bucket, st.TTL(), st.History(), st.Config().MaxValueSize, err)
		}
	}
	a.Close()
	b.Close()
	if nc.IsClosed() {
		t.Fatal("closing the stores closed the shared connection")
	}
	own := openNATS(t, srv.URL(), NATSOptions{Bucket: "bucket_a"})
	own.Close()
	if !own.Conn().IsClosed() {
		t.Fatal("a store's own connection is still open after Close")
	}
}

// With the server gone an operation fails at once; once the server is
// back (same store) the connection reconnects, both buckets answer again
// with their values, and the reconnect is counted.
func TestNATSServerRestarts(t *testing.T) {
	srv := natstest.Start(t)
	_, a, b, reconnected, disconnected := twoBuckets(t, srv.URL())
	for _, s := range []*NATS{a, b} {
		if err := s.CompareAndSwap(ctx, "k.1", []byte(`1`), 0); err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop()
	<-disconnected // the test's timeout is the hang guard
	long, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	if _, _, err := a.Get(long, "k.1"); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get with the server gone: %v, want an immediate failure", err)
	}
	if err := b.CompareAndSwap(long, "k.2", []byte(`2`), 0); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CompareAndSwap with the server gone: %v, want an immediate failure", err)
	}
	natstest.StartAt(t, srv.Port, srv.Dir)
	<-reconnected
	for _, s := range []*NATS{a, b} {
		if v, rev := mustGet(t, s, "k.1"); v != "1" || rev == 0 {
			t.Fatalf("after the restart: %q at %d", v, rev)
		}
		if n := s.Reconnects(); n != 1 {
			t.Fatalf("Reconnects = %d, want 1", n)
		}
	}
}

// A server restarted without its store has neither bucket: the next
// operations bind them again, creating them with their configuration.
func TestNATSServerLosesItsStore(t *testing.T) {
	srv := natstest.Start(t)
	nc, a, b, reconnected, _ := twoBuckets(t, srv.URL())
	for _, s := range []*NATS{a, b} {
		if err := s.CompareAndSwap(ctx, "k.1", []byte(`1`), 0); err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop()
	natstest.StartAt(t, srv.Port, t.TempDir()) // same port, empty store
	<-reconnected
	for _, s := range []*NATS{a, b} {
		// The first operation may find the old binding gone (and forget
		// it); the next binds, creating the bucket.
		var err error
		for range 2 {
			if err = s.CompareAndSwap(ctx, "k.1", []byte(`2`), 0); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("%s after the server lost its store: %v", s.o.Bucket, err)
		}
		if v, _ := mustGet(t, s, "k.1"); v != "2" {
			t.Fatalf("%s: %q", s.o.Bucket, v)
		}
	}
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, "bucket_b")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := kv.Status(ctx); err != nil || st.TTL() != 2*time.Hour || st.History() != 1 {
		t.Fatalf("re-created bucket: ttl=%v history=%d err=%v", st.TTL(), st.History(), err)
	}
}

// A server that is not there at start is not an error; operations fail
// at once, and a watch cannot start.
func TestNATSUnreachableAtStart(t *testing.T) {
	s := openNATS(t, natstest.DeadURL(t), NATSOptions{})
	if _, _, err := s.Get(ctx, "k"); err == nil {
		t.Fatal("Get from no server succeeded")
	}
	if _, err := s.List(ctx, ""); err == nil {
		t.Fatal("List from no server succeeded")
	}
	if _, err := s.Watch("k.", func(Item) {}); err == nil {
		t.Fatal("Watch on no server succeeded")
	}
}

func TestNATSFilter(t *testing.T) {
	for prefix, want := range map[string]string{
		"": ">", "h.": "h.>", "h.a.": "h.a.>", "h.a": "h.>", "ns": ">",
	} {
		if got := filter(prefix); got != want {
			t.Errorf("filter(%q) = %q, want %q", prefix, got, want)
		}
	}
}
