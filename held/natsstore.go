package held

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of NATSOptions.
const (
	DefaultBucket = "acp_guard_held"
	// DefaultBucketTTL is the bucket's max age: an entry nobody wrote for
	// this long disappears. Held entries are rewritten every RefreshEvery
	// while held, so only ended and abandoned ones ever reach it.
	DefaultBucketTTL = time.Hour
	natsMaxValue     = 8 << 10 // an entry is < 4 KiB with every field at its bound
)

// NATSOptions configures NATSStore. Zero fields take the defaults.
type NATSOptions struct {
	Bucket string        // key-value bucket name
	TTL    time.Duration // bucket max age
	Name   string        // client connection name shown by the server
	Extra  []nats.Option // more NATS client options (credentials, TLS)
}

// NATSStore keeps held-prompt entries in a NATS JetStream key-value bucket
// (one value per entry, keyed by its id, so a NATS permission on
// "$KV.<bucket>.h.<namespace>.>" confines a tenant), shared by every
// acp-guard that reaches the server. The connection reconnects forever in
// the background and buffers nothing while disconnected: an operation
// during an outage fails at once.
type NATSStore struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	opts NATSOptions

	mu sync.Mutex
	kv jetstream.KeyValue // bound on first use
}

// OpenNATS connects to url (nats://host:port, tls://…; comma-separated
// servers allowed). An unreachable server is not an error here.
func OpenNATS(url string, opts NATSOptions) (*NATSStore, error) {
	if opts.Bucket == "" {
		opts.Bucket = DefaultBucket
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultBucketTTL
	}
	if opts.Name == "" {
		opts.Name = "acp-guard"
	}
	nopts := append([]nats.Option{
		nats.Name(opts.Name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.ReconnectBufSize(-1),
	}, opts.Extra...)
	nc, err := nats.Connect(url, nopts...)
	if err != nil {
		return nil, fmt.Errorf("held store: nats: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("held store: jetstream: %w", err)
	}
	return &NATSStore{nc: nc, js: js, opts: opts}, nil
}

// bucket binds the key-value bucket, creating it when it does not exist.
func (s *NATSStore) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv != nil {
		return s.kv, nil
	}
	if !s.nc.IsConnected() {
		return nil, fmt.Errorf("held store: nats: not connected (%s)", s.nc.Status())
	}
	kv, err := s.js.KeyValue(ctx, s.opts.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = s.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:       s.opts.Bucket,
			Description:  "acp-guard held prompts (" + FileFormat + " entries)",
			History:      1,
			TTL:          s.opts.TTL,
			MaxValueSize: natsMaxValue,
			Storage:      jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = s.js.KeyValue(ctx, s.opts.Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("held store: nats bucket %s: %w", s.opts.Bucket, err)
	}
	s.kv = kv
	return kv, nil
}

// lost forgets the bound bucket after an error saying the server no
// longer has it, so the next operation binds (or creates) it again.
func (s *NATSStore) lost(err error) {
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
		s.mu.Lock()
		s.kv = nil
		s.mu.Unlock()
	}
}

// Get implements Store.
func (s *NATSStore) Get(ctx context.Context, id string) (*Entry, uint64, error) {
	kv, err := s.bucket(ctx)
	if err != nil {
		return nil, 0, err
	}
	e, err := kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, 0, nil
	}
	if err != nil {
		s.lost(err)
		return nil, 0, fmt.Errorf("held store: nats get: %w", err)
	}
	en, err := decodeEntry(e.Value())
	if err != nil {
		return nil, 0, err
	}
	return &en, e.Revision(), nil
}

// CompareAndSwap implements Store: Create when rev is 0 (also over a
// deleted key), else Update at rev.
func (s *NATSStore) CompareAndSwap(ctx context.Context, id string, e Entry, rev uint64) error {
	kv, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	b, err := encodeEntry(e)
	if err != nil {
		return fmt.Errorf("held store: encoding: %w", err)
	}
	if rev == 0 {
		_, err = kv.Create(ctx, id, b)
	} else {
		_, err = kv.Update(ctx, id, b, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return ErrConflict
	}
	if err != nil {
		s.lost(err)
		return fmt.Errorf("held store: nats put: %w", err)
	}
	return nil
}

// List implements Store with one watcher over the prefix: the current
// value of every key under it, then the end marker.
func (s *NATSStore) List(ctx context.Context, prefix string) ([]Stored, error) {
	kv, err := s.bucket(ctx)
	if err != nil {
		return nil, err
	}
	w, err := kv.WatchFiltered(ctx, []string{strings.TrimSuffix(prefix, ".") + ".>"}, jetstream.IgnoreDeletes())
	if err != nil {
		s.lost(err)
		return nil, fmt.Errorf("held store: nats list: %w", err)
	}
	defer w.Stop()
	var out []Stored
	for {
		select {
		case <-ctx.Done():
			return out, fmt.Errorf("held store: nats list: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok || e == nil { // the initial values are done
				slices.SortFunc(out, func(a, b Stored) int { return cmp.Compare(a.ID, b.ID) })
				return out, nil
			}
			if st, ok := stored(e); ok && strings.HasPrefix(st.ID, prefix) {
				out = append(out, st)
			}
		}
	}
}

// stored decodes a watched value (puts only; other formats skipped).
func stored(e jetstream.KeyValueEntry) (Stored, bool) {
	if e.Operation() != jetstream.KeyValuePut {
		return Stored{}, false
	}
	en, err := decodeEntry(e.Value())
	if err != nil {
		return Stored{}, false
	}
	return Stored{ID: e.Key(), Rev: e.Revision(), Entry: en}, true
}

// Watch implements Store: a JetStream watcher over the prefix, updates
// only; its goroutine passes each changed entry to fn. A watch needs the
// server: when it is unreachable Watch fails, and the caller asks again
// later.
func (s *NATSStore) Watch(prefix string, fn func(Stored)) (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	kv, err := s.bucket(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	w, err := kv.WatchFiltered(ctx, []string{strings.TrimSuffix(prefix, ".") + ".>"}, jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		cancel()
		s.lost(err)
		return nil, fmt.Errorf("held store: nats watch: %w", err)
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
				if st, ok := stored(e); ok {
					fn(st)
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

// Close implements Store: it closes the connection.
func (s *NATSStore) Close() error {
	s.nc.Close()
	return nil
}
