package circuit

import (
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
	DefaultBucket = "acp_guard_circuits"
	// DefaultBucketTTL is the bucket's max age: a circuit nobody wrote for
	// this long disappears (twice the longest cooldown).
	DefaultBucketTTL = 2 * DefaultMaxCooldown
	natsMaxValue     = 16 << 10 // a record is < 5 KiB even with every field at its bound and JSON-escaped
	// natsReconnectWait is the pause between reconnect attempts (the
	// client adds its own jitter): a restarted server is found within
	// about a second, and Circuits asks it at once after a reconnect.
	natsReconnectWait = time.Second
)

// NATSOptions configures NATSStore. Zero fields take the defaults.
type NATSOptions struct {
	Bucket string        // key-value bucket name
	TTL    time.Duration // bucket max age (TTL of every entry since its last write)
	Name   string        // client connection name shown by the server
	// Extra are additional nats.go options (credentials, TLS).
	Extra []nats.Option
}

// NATSStore keeps circuits in a NATS JetStream key-value bucket, shared by
// every acp-guard on every machine that reaches the server. A record's key
// is Key.ID ("ns.<namespace>.<hash>", so a NATS permission on
// "$KV.<bucket>.ns.<namespace>.>" confines a tenant), its value the JSON
// record, and every change a revision-checked Create or Update. The
// connection reconnects forever in the background and buffers nothing
// while disconnected, so an operation during an outage fails at once
// instead of waiting.
type NATSStore struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	opts NATSOptions

	mu sync.Mutex
	kv jetstream.KeyValue // bound on first use; nil until then
}

// OpenNATS connects to url (nats://host:port). An unreachable server is not
// an error here: the client keeps reconnecting and operations fail with
// ErrStore until it answers.
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
		nats.ReconnectWait(natsReconnectWait),
		nats.ReconnectBufSize(-1),
	}, opts.Extra...)
	nc, err := nats.Connect(url, nopts...)
	if err != nil {
		return nil, fmt.Errorf("circuit store: nats %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("circuit store: jetstream: %w", err)
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
		return nil, fmt.Errorf("circuit store: nats: not connected (%s)", s.nc.Status())
	}
	kv, err := s.js.KeyValue(ctx, s.opts.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = s.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:       s.opts.Bucket,
			Description:  "acp-guard circuits (" + FileFormat + " records)",
			History:      1,
			TTL:          s.opts.TTL,
			MaxValueSize: natsMaxValue,
			Storage:      jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = s.js.KeyValue(ctx, s.opts.Bucket) // created concurrently
		}
	}
	if err != nil {
		return nil, fmt.Errorf("circuit store: nats bucket %s: %w", s.opts.Bucket, err)
	}
	s.kv = kv
	return kv, nil
}

// Reconnects is how many times the connection came back after a loss
// (Circuits asks a failed store again at once when it changes).
func (s *NATSStore) Reconnects() uint64 { return s.nc.Stats().Reconnects }

// lost forgets the bound bucket after an error saying the server no longer
// has it (a server restarted without its store directory, a bucket
// deleted by hand: a direct get then has no responders), so that the next
// operation binds it again, creating it if need be.
func (s *NATSStore) lost(err error) {
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoResponders) {
		s.mu.Lock()
		s.kv = nil
		s.mu.Unlock()
	}
}

// Get implements Store.
func (s *NATSStore) Get(ctx context.Context, id string) (*Record, uint64, error) {
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
		return nil, 0, fmt.Errorf("circuit store: nats get: %w", err)
	}
	r, err := decodeRecord(e.Value())
	if err != nil {
		return nil, 0, err
	}
	return &r, e.Revision(), nil
}

// CompareAndSwap implements Store: Create when rev is 0 (also over a
// deleted key), else Update at rev.
func (s *NATSStore) CompareAndSwap(ctx context.Context, id string, rec Record, rev uint64) error {
	kv, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	b, err := encodeRecord(rec)
	if err != nil {
		return fmt.Errorf("circuit store: encoding: %w", err)
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
		return fmt.Errorf("circuit store: nats put: %w", err)
	}
	return nil
}

// List implements Store. Records of another format are skipped.
func (s *NATSStore) List(ctx context.Context) ([]Record, error) {
	kv, err := s.bucket(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("circuit store: nats keys: %w", err)
	}
	slices.Sort(keys)
	var out []Record
	for _, k := range keys {
		if !strings.HasPrefix(k, "ns.") {
			continue
		}
		r, _, err := s.Get(ctx, k)
		if errors.Is(err, ErrFormat) || r == nil {
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, *r)
	}
	return out, nil
}

// Delete implements Store.
func (s *NATSStore) Delete(ctx context.Context, id string) error {
	kv, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	if err := kv.Delete(ctx, id); err != nil {
		return fmt.Errorf("circuit store: nats delete: %w", err)
	}
	return nil
}

// Close implements Store: it closes the connection.
func (s *NATSStore) Close() error {
	s.nc.Close()
	return nil
}
