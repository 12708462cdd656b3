package kvstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ReconnectWait is the pause between a NATS connection's reconnect
// attempts (the client adds its own jitter): a restarted server is found
// within about a second.
const ReconnectWait = time.Second

// ClusterReplicas is the replication of a bucket the store creates on a
// clustered server (one that names its cluster); on a single server, one.
// An existing bucket is used as it is: on a cluster of fewer than three
// servers, create it first (`nats kv add --replicas`).
const ClusterReplicas = 3

// DialNATS connects to url (nats://host:port or tls://…, comma-separated
// servers allowed) the way every acp-guard store connection behaves: it
// reconnects forever in the background, every ReconnectWait, and buffers
// nothing while disconnected, so an operation during an outage fails at
// once instead of waiting. A server unreachable now is not an error: the
// client keeps trying. name is the connection name the server shows
// ("acp-guard" when empty); extra are further client options (credentials,
// TLS, handlers), applied last. One connection serves every bucket of a
// process (NATSOptions.Conn).
func DialNATS(url, name string, extra ...nats.Option) (*nats.Conn, error) {
	if name == "" {
		name = "acp-guard"
	}
	opts := append([]nats.Option{
		nats.Name(name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(ReconnectWait),
		nats.ReconnectBufSize(-1),
	}, extra...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err) // the URL may hold a password
	}
	return nc, nil
}

// NATSOptions configures one bucket of a NATS store.
type NATSOptions struct {
	// Conn is a connection to share (DialNATS's); the store does not close
	// it. nil: OpenNATS dials its own (with Name and Extra) and Close
	// closes it.
	Conn  *nats.Conn
	Name  string
	Extra []nats.Option

	Bucket      string        // the key-value bucket's name (required)
	Description string        // shown by the server when the store creates the bucket
	TTL         time.Duration // the bucket's max age: a key nobody wrote for this long disappears
	MaxValue    int32         // the largest value the bucket takes (bytes)
}

// NATS keeps values in a NATS JetStream key-value bucket, shared by every
// process on every machine that reaches the server: one revision per key,
// every change a revision-checked Create (revision 0, also over a deleted
// key) or Update, a wrong-last-sequence answer ErrConflict. The bucket is
// bound on first use and created when absent; after an error saying the
// server no longer has it (a server restarted without its store
// directory, a bucket deleted by hand) the next operation binds it again,
// creating it if need be.
type NATS struct {
	nc  *nats.Conn
	own bool // Close closes nc
	js  jetstream.JetStream
	o   NATSOptions

	checking atomic.Bool  // a check of a connection that may have stalled is running
	left     atomic.Int64 // unix ns of leaveServer's last reconnect
	replies  replies      // the reads' answers (natsget.go)

	mu    sync.Mutex
	kv    jetstream.KeyValue // bound on first use; nil until then and after a loss
	stale jetstream.KeyValue // the binding dropped after a no-responders answer, kept in case the bucket is still there
}

// OpenNATS opens the bucket o names on o.Conn, or on a connection of its
// own to url. An unreachable server is not an error here: operations fail
// until it answers.
func OpenNATS(url string, o NATSOptions) (*NATS, error) {
	if o.Bucket == "" {
		return nil, errors.New("nats store: no bucket name")
	}
	nc, own := o.Conn, false
	if nc == nil {
		var err error
		if nc, err = DialNATS(url, o.Name, o.Extra...); err != nil {
			return nil, err
		}
		own = true
	}
	js, err := jetstream.New(nc)
	if err != nil {
		if own {
			nc.Close()
		}
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &NATS{nc: nc, own: own, js: js, o: o}, nil
}

// Conn is the store's connection (to share with another bucket).
func (s *NATS) Conn() *nats.Conn { return s.nc }

// Reconnects is how many times the connection came back after a loss (a
// caller that left a failed store alone asks again when it changes).
func (s *NATS) Reconnects() uint64 { return s.nc.Stats().Reconnects }

// bucket binds the key-value bucket, creating it when it does not exist.
func (s *NATS) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv != nil {
		return s.kv, nil
	}
	if !s.nc.IsConnected() {
		return nil, fmt.Errorf("nats: not connected (%s)", s.nc.Status())
	}
	kv, err := s.js.KeyValue(ctx, s.o.Bucket)
	if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) && s.stale != nil {
		// The server could not say (a cluster electing its meta leader
		// answers "temporarily unavailable"): the bucket dropped after
		// no-responders is most likely there still — a stream between
		// leaders — so keep using it rather than fail for the lookup.
		s.kv, s.stale = s.stale, nil
		return s.kv, nil
	}
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		cfg := jetstream.KeyValueConfig{
			Bucket:       s.o.Bucket,
			Description:  s.o.Description,
			History:      1,
			TTL:          s.o.TTL,
			MaxValueSize: s.o.MaxValue,
			Storage:      jetstream.FileStorage,
			Replicas:     1,
		}
		if s.nc.ConnectedClusterName() != "" {
			cfg.Replicas = ClusterReplicas // a cluster: replicated, so that losing a server loses nothing
		}
		kv, err = s.js.CreateKeyValue(ctx, cfg) // a cluster still forming fails: asked again by the next operation
		if err == nil && cfg.Replicas > 1 {
			kv, err = s.leaderReads(ctx)
		}
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = s.js.KeyValue(ctx, s.o.Bucket) // created concurrently
		}
	}
	if err != nil {
		return nil, fmt.Errorf("nats bucket %s: %w", s.o.Bucket, err)
	}
	s.kv = kv
	return kv, nil
}

// leaderReads turns the replicated bucket's direct gets off, so that
// every read is answered by the stream's leader — the one that orders the
// writes — and a lagging replica never answers one (a session decides on
// what the majority stored, or, when no leader answers, on its own last
// view), then binds it again.
func (s *NATS) leaderReads(ctx context.Context) (jetstream.KeyValue, error) {
	st, err := s.js.Stream(ctx, "KV_"+s.o.Bucket)
	if err != nil {
		return nil, err
	}
	cfg := st.CachedInfo().Config
	if cfg.AllowDirect {
		cfg.AllowDirect = false
		if _, err := s.js.UpdateStream(ctx, cfg); err != nil {
			return nil, err
		}
	}
	return s.js.KeyValue(ctx, s.o.Bucket)
}

// failed forgets the bound bucket after an error saying the server no
// longer has it (a direct get then has no responders), so that the next
// operation binds it again, and returns err described by what.
func (s *NATS) failed(what string, err error) error {
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoResponders) {
		s.mu.Lock()
		if s.kv != nil {
			s.stale = s.kv
		}
		s.kv = nil
		s.mu.Unlock()
	}
	var apiErr *jetstream.APIError
	switch {
	case unknownOutcome(err):
		s.checkConn()
	case errors.As(err, &apiErr) && apiErr.ErrorCode == clusterUnavailable:
		s.leaveServer()
	}
	if unsettled(err) {
		return fmt.Errorf("nats %s (via %s): %w: %w", what, s.nc.ConnectedServerName(), ErrUnsettled, err)
	}
	return fmt.Errorf("nats %s (via %s): %w", what, s.nc.ConnectedServerName(), err)
}

// ErrUnsettled is wrapped by a store error that says the store is between
// two states and answers again in a moment, and that nothing was stored:
// no server took the request (no responders: a stream electing its
// leader) or the connected server is not current with its cluster. A
// caller asks again at its next operation instead of leaving the store
// alone (Health.Unsettled).
var ErrUnsettled = errors.New("not settled (between leaders, or catching up)")

// unsettled reports whether err is one of ErrUnsettled's.
func unsettled(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		(errors.As(err, &apiErr) && apiErr.ErrorCode == clusterUnavailable)
}

// clusterUnavailable is the JetStream error of a server that is not
// current with its cluster (one that rejoined after a partition and is
// catching up, one without a meta leader): "JetStream system temporarily
// unavailable".
const clusterUnavailable jetstream.ErrorCode = 10008

// leaveServer moves the connection to the next server of the list when
// the connected one says it is not current with its cluster (at most once
// per leaveEvery): a server that was cut off answers so for seconds after
// the network healed, while the others serve.
func (s *NATS) leaveServer() {
	now := time.Now().UnixNano()
	last := s.left.Load()
	if now-last < int64(leaveEvery) || !s.left.CompareAndSwap(last, now) {
		return
	}
	if len(s.nc.Servers()) > 1 {
		_ = s.nc.ForceReconnect()
	}
}

// leaveEvery spaces leaveServer's reconnects.
const leaveEvery = 2 * time.Second

// stallCheck bounds the round trip that tells a stalled connection from a
// slow server (a server busy catching up, on a loaded machine, answers a
// ping in well under this; a connection cut off answers none).
const stallCheck = 2 * time.Second

// checkConn, after a call timed out, pings the server (in the
// background, one check at a time): a server that answers the ping is
// only slow (a stream without a leader, a busy machine) and the
// connection stays; one that does not is behind a connection that
// stalled — a network cut off, its packets lost, TCP retransmitting ever
// more slowly — so the client reconnects at once, to the next server of
// the list, and keeps trying every ReconnectWait. A cut-off host thus
// finds the cluster again within about stallCheck + ReconnectWait of healing instead
// of after TCP's backed-off retransmission, and the reconnect has
// failed stores asked at once (Health).
func (s *NATS) checkConn() {
	if !s.checking.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.checking.Store(false)
		if s.nc.IsConnected() && s.nc.FlushTimeout(stallCheck) != nil && s.nc.IsConnected() {
			_ = s.nc.ForceReconnect()
		}
	}()
}

// Ping reports whether the server of the connection answers a round trip
// within ctx: nil means the connection is up and the server there (a
// store call that is late is slow, not lost). Not connected, or no
// answer in time (a connection that stalled: a network cut off), is an
// error; the latter also moves the connection to the next server at once,
// as checkConn does.
func (s *NATS) Ping(ctx context.Context) error {
	if !s.nc.IsConnected() {
		return nats.ErrConnectionClosed
	}
	err := s.nc.FlushWithContext(ctx)
	if err != nil && s.nc.IsConnected() {
		_ = s.nc.ForceReconnect()
	}
	return err
}

// Get implements Store (read: the stream leader's answer).
func (s *NATS) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	if _, err := s.bucket(ctx); err != nil {
		return nil, 0, err
	}
	e, err := s.read(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, s.failed("get", err)
	}
	return e.value, e.rev, nil
}

// CompareAndSwap implements Store: Create when rev is 0 (also over a
// deleted key), else Update at rev.
func (s *NATS) CompareAndSwap(ctx context.Context, key string, value []byte, rev uint64) error {
	kv, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	if rev == 0 {
		_, err = kv.Create(ctx, key, value)
	} else {
		_, err = kv.Update(ctx, key, value, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return ErrConflict
	}
	if err != nil && unknownOutcome(err) {
		// The request may have reached the stream's leader and been
		// stored after all (a leader that moved, a reply lost): read the
		// key back before anyone decides again, so the change is never
		// made twice or taken for undone.
		rctx, cancel := context.WithTimeout(context.Background(), readBackTimeout)
		defer cancel()
		err = readBack(err, value, rev, func() ([]byte, uint64, error) { return s.Get(rctx, key) })
	}
	if err != nil {
		return s.failed("put", err)
	}
	return nil
}

// readBackTimeout bounds the read that settles a swap whose answer was
// lost.
const readBackTimeout = 2 * time.Second

// unknownOutcome reports whether a swap's error leaves open whether the
// server stored it: a timeout (the request went out, no answer came).
// Every other error was an answer, or means the request never left (not
// connected, no responders: nobody received it).
func unknownOutcome(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

// readBack settles a compare-and-swap of value at rev that failed with
// the unknown outcome err, from the key as it is now (get): stored there
// with value, past rev — the swap landed (nil); still at rev (or absent
// for a create) — it did not, and err stands; anything else — another
// writer came first (ErrConflict: the caller re-reads and decides
// again). When the read fails too, err stands: the caller treats the
// store as unavailable and asks it again later, always reading first.
func readBack(err error, value []byte, rev uint64, get func() ([]byte, uint64, error)) error {
	cur, curRev, gerr := get()
	switch {
	case gerr != nil:
		return fmt.Errorf("%w (read back: %v)", err, gerr)
	case curRev > rev && bytes.Equal(cur, value):
		return nil
	case curRev == rev:
		return err
	default:
		return ErrConflict
	}
}

// Delete implements Store.
func (s *NATS) Delete(ctx context.Context, key string) error {
	kv, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	if err := kv.Delete(ctx, key); err != nil {
		return s.failed("delete", err)
	}
	return nil
}

// filter is the NATS subject filter that covers every key under prefix:
// the prefix's whole tokens, then ">". Keys are matched against the whole
// prefix afterwards.
func filter(prefix string) string {
	return prefix[:strings.LastIndex(prefix, ".")+1] + ">"
}

// List implements Store with one watcher over the prefix: the current
// value of every key under it, then the end marker.
func (s *NATS) List(ctx context.Context, prefix string) ([]Item, error) {
	kv, err := s.bucket(ctx)
	if err != nil {
		return nil, err
	}
	w, err := kv.WatchFiltered(ctx, []string{filter(prefix)}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, s.failed("list", err)
	}
	defer w.Stop()
	var out []Item
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("nats list: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok || e == nil { // the initial values are done
				return sortItems(out), nil
			}
			if it, ok := item(e); ok && under(it.Key, prefix) {
				out = append(out, it)
			}
		}
	}
}

// item is a watched value (puts only).
func item(e jetstream.KeyValueEntry) (Item, bool) {
	if e.Operation() != jetstream.KeyValuePut {
		return Item{}, false
	}
	return Item{Key: e.Key(), Rev: e.Revision(), Value: e.Value()}, true
}

// Watch implements Store: a JetStream watcher over the prefix, updates
// only; its goroutine passes each changed item to fn. A watch needs the
// server: when it is unreachable Watch fails, and the caller asks again
// later.
func (s *NATS) Watch(prefix string, fn func(Item)) (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	kv, err := s.bucket(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	w, err := kv.WatchFiltered(ctx, []string{filter(prefix)}, jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		cancel()
		return nil, s.failed("watch", err)
	}
	exited := make(chan struct{})
	// The watch's goroutine ends when stop cancels ctx (or the watcher
	// closes its channel); stop waits for it.
	go func() {
		defer close(exited)
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue
				}
				if it, ok := item(e); ok && under(it.Key, prefix) {
					fn(it)
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			_ = w.Stop()
			<-exited
		})
	}, nil
}

// Close implements Store: it ends the reads' subscription, and closes
// the connection if the store dialled it (a shared one is its owner's to
// close).
func (s *NATS) Close() error {
	s.replies.mu.Lock()
	if s.replies.sub != nil {
		_ = s.replies.sub.Unsubscribe()
		s.replies.sub = nil
	}
	s.replies.mu.Unlock()
	if s.own {
		s.nc.Close()
	}
	return nil
}

// natsBackend: "nats://…" or "tls://…" (comma-separated servers), the
// schema's bucket; the stores of a process share one connection (Share).
var natsBackend = Backend{
	Kind: KindNATS, Want: "a nats:// URL",
	Match: func(spec string) bool {
		return strings.HasPrefix(spec, "nats://") || strings.HasPrefix(spec, "tls://")
	},
	Open: func(spec string, s Schema, o Options) (Store, error) { return OpenNATS(spec, s.bucket(o)) },
	Share: func(spec string, o Options) (Options, func() error, error) {
		nc, err := DialNATS(spec, o.Name, o.Extra...)
		if err != nil {
			return o, nil, err
		}
		o.Conn = nc
		return o, func() error { nc.Close(); return nil }, nil
	},
}

// String says where the store keeps its values.
func (s *NATS) String() string { return "nats bucket " + s.o.Bucket }
