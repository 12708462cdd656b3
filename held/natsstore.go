package held

import (
	"cmp"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/acp-guard/acp-guard/internal/kvstore"
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
	// Conn is a connection to share with the process's other buckets (the
	// circuits'); the store does not close it. nil: OpenNATS dials its
	// own, with Name and Extra, and Close closes it.
	Conn  *nats.Conn
	Name  string        // client connection name shown by the server
	Extra []nats.Option // more NATS client options (credentials, TLS)
}

// NATSStore keeps held-prompt entries in a NATS JetStream key-value bucket
// (a kvstore.NATS, as the circuits' NATS store: it reconnects forever,
// fails at once while disconnected, and creates the bucket again when the
// server lost it), one value per entry keyed by its id, so a NATS
// permission on "$KV.<bucket>.h.<namespace>.>" confines a tenant.
type NATSStore struct {
	kvStore
	nats *kvstore.NATS
}

// OpenNATS connects to url (nats://host:port, tls://…; comma-separated
// servers allowed), or uses opts.Conn. An unreachable server is not an
// error here.
func OpenNATS(url string, opts NATSOptions) (*NATSStore, error) {
	s, err := kvstore.OpenNATS(url, kvstore.NATSOptions{
		Conn: opts.Conn, Name: opts.Name, Extra: opts.Extra,
		Bucket: cmp.Or(opts.Bucket, DefaultBucket), Description: "acp-guard held prompts (" + FileFormat + " entries)",
		TTL: cmp.Or(max(opts.TTL, 0), DefaultBucketTTL), MaxValue: natsMaxValue,
	})
	if err != nil {
		return nil, fmt.Errorf("held store: %w", err)
	}
	return &NATSStore{newKVStore(s), s}, nil
}

// Reconnects is how many times the connection came back after a loss.
func (s *NATSStore) Reconnects() uint64 { return s.nats.Reconnects() }
