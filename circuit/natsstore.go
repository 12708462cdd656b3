package circuit

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// Defaults of NATSOptions.
const (
	DefaultBucket = "acp_guard_circuits"
	// DefaultBucketTTL is the bucket's max age: a circuit nobody wrote for
	// this long disappears (twice the longest cooldown).
	DefaultBucketTTL = 2 * DefaultMaxCooldown
	natsMaxValue     = 16 << 10 // a record is < 5 KiB even with every field at its bound and JSON-escaped
)

// NATSOptions configures NATSStore. Zero fields take the defaults.
type NATSOptions struct {
	Bucket string        // key-value bucket name
	TTL    time.Duration // bucket max age (TTL of every entry since its last write)
	// Conn is a connection to share with the process's other buckets (the
	// held prompts'); the store does not close it. nil: OpenNATS dials
	// its own, with Name and Extra, and Close closes it.
	Conn *nats.Conn
	Name string // client connection name shown by the server
	// Extra are additional NATS client options (credentials, TLS).
	Extra []nats.Option
}

// NATSStore keeps circuits in a NATS JetStream key-value bucket, shared by
// every acp-guard on every machine that reaches the server (a
// kvstore.NATS: it reconnects forever, fails at once while disconnected,
// and creates the bucket again when the server lost it). A record's key
// is Key.ID ("ns.<namespace>.<hash>", so a NATS permission on
// "$KV.<bucket>.ns.<namespace>.>" confines a tenant), its value the JSON
// record.
type NATSStore struct {
	kvStore
	nats *kvstore.NATS
}

// OpenNATS connects to url (nats://host:port), or uses opts.Conn. An
// unreachable server is not an error here: the client keeps reconnecting
// and operations fail with ErrStore until it answers.
func OpenNATS(url string, opts NATSOptions) (*NATSStore, error) {
	s, err := kvstore.OpenNATS(url, kvstore.NATSOptions{
		Conn: opts.Conn, Name: opts.Name, Extra: opts.Extra,
		Bucket: cmp.Or(opts.Bucket, DefaultBucket), Description: "acp-guard circuits (" + FileFormat + " records)",
		TTL: cmp.Or(max(opts.TTL, 0), DefaultBucketTTL), MaxValue: natsMaxValue,
	})
	if err != nil {
		return nil, fmt.Errorf("circuit store: %w", err)
	}
	return &NATSStore{newKVStore(s), s}, nil
}

// Reconnects is how many times the connection came back after a loss
// (Circuits asks a failed store again at once when it changes).
func (s *NATSStore) Reconnects() uint64 { return s.nats.Reconnects() }

// Ping reports whether the connection is up and its server answers a
// round trip within ctx (Circuits asks it when a call is late: a store
// that answers a ping is slow, and the call is waited for).
func (s *NATSStore) Ping(ctx context.Context) error { return s.nats.Ping(ctx) }

// Conn is the store's connection, to share with another bucket.
func (s *NATSStore) Conn() *nats.Conn { return s.nats.Conn() }
