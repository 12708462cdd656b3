package held

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// Stored is an entry with its id and revision.
type Stored struct {
	ID    string
	Rev   uint64
	Entry Entry
}

// Store keeps held-prompt entries by id with a revision per entry, so that
// every change is a compare-and-swap. OpenStore opens it over a shared
// backend of internal/kvstore (the file document, a NATS bucket). All
// methods are safe for concurrent use.
type Store interface {
	// Get returns the entry stored under id and its revision, or
	// (nil, 0, nil) when there is none.
	Get(ctx context.Context, id string) (*Entry, uint64, error)
	// CompareAndSwap stores e under id if the stored revision is still rev
	// (0: if there is no entry), else fails with ErrConflict.
	CompareAndSwap(ctx context.Context, id string, e Entry, rev uint64) error
	// List returns every entry whose id starts with prefix, in id order.
	// Entries of another format are skipped.
	List(ctx context.Context, prefix string) ([]Stored, error)
	// Watch calls fn, from a goroutine of the store's, with entries under
	// prefix that may have changed since the last call (at least every
	// changed one), until stop is called. stop waits for that goroutine.
	Watch(prefix string, fn func(Stored)) (stop func(), err error)
	Close() error
}

// ErrConflict is returned by CompareAndSwap when the entry changed since
// it was read.
var ErrConflict = errors.New("held: entry changed concurrently")

// ErrStore is wrapped by every error that means "the store could not
// answer".
var ErrStore = errors.New("held: store unavailable")

// The held prompts in every shared backend: one JSON document in the
// state directory, shared by every acp-guard process of the user on the
// machine (kvstore.File: written under an flock(2), replaced atomically,
// read without a lock), each entry {"rev":R,"entry":{…}}, bounded
// (kvstore's defaults: 8 MiB; on every write, entries that expired before
// the newest entry's update go, then the oldest beyond 4096), watched by
// a stat every kvstore.DefaultPoll; or a NATS bucket, one value per entry
// keyed by its id, so a NATS permission on "$KV.<bucket>.h.<namespace>.>"
// confines a tenant.
const (
	FileName      = "held.json"
	LockFileName  = "held.lock"
	FileFormat    = "acp-guard.held/1" // the document's format (see doc.go)
	DefaultBucket = "acp_guard_held"
	// DefaultBucketTTL is the bucket's max age: an entry nobody wrote for
	// this long disappears. Held entries are rewritten every RefreshEvery
	// while held, so only ended and abandoned ones ever reach it.
	DefaultBucketTTL = time.Hour
	natsMaxValue     = 8 << 10 // an entry is < 4 KiB with every field at its bound
)

// entries are the held prompts over any shared backend (kvstore.View):
// the Schema above, the stored format of entry.go.
var entries = &kvstore.View[Entry]{Schema: kvstore.Schema{
	What: "held store", Shared: true,
	File: kvstore.FileOptions{Name: FileName, LockName: LockFileName, Format: FileFormat, Member: "entry", Times: entryTimes},
	NATS: kvstore.NATSOptions{Bucket: DefaultBucket, Description: "acp-guard held prompts (" + FileFormat + " entries)",
		TTL: DefaultBucketTTL, MaxValue: natsMaxValue},
}, Encode: encodeEntry, Decode: decodeEntry, Conflict: ErrConflict, Format: ErrFormat}

// Options is how a process opens its stores (kvstore.Options, the one
// set shared with circuit and presence).
type Options = kvstore.Options

// OpenStore opens the store that a --circuits value names (kvstore.Open),
// beside the circuits: "" or "file" → the document in o.Dir; "nats://…"
// or "tls://…" → the bucket DefaultBucket; "off" or "memory" → nil (no
// shared store: prompts are not published). Anything else is an error.
func OpenStore(spec string, o Options) (Store, error) {
	t, err := entries.Open(spec, o)
	if t == nil {
		return nil, err
	}
	return kvStore{t}, nil
}

// kvStore is every Store: entries in their stored format (entry.go) as the
// values of a revisioned key-value store (internal/kvstore); its
// Reconnects is the backend's, which the Board's health follows.
type kvStore struct{ *kvstore.Typed[Entry] }

// List implements Store.
func (s kvStore) List(ctx context.Context, prefix string) ([]Stored, error) {
	es, err := s.Typed.List(ctx, prefix)
	var out []Stored
	for _, e := range es {
		out = append(out, stored(e))
	}
	return out, err
}

// Watch implements Store.
func (s kvStore) Watch(prefix string, fn func(Stored)) (func(), error) {
	return s.Typed.Watch(prefix, func(e kvstore.Entry[Entry]) { fn(stored(e)) })
}

func stored(e kvstore.Entry[Entry]) Stored { return Stored{ID: e.Key, Rev: e.Rev, Entry: e.Value} }

// entryTimes is the file document's pruning rule: an entry goes once it
// expired before the newest update in the document.
func entryTimes(b []byte) (updated, expires time.Time) {
	var e struct {
		Expires   time.Time `json:"expires"`
		UpdatedAt time.Time `json:"updatedAt"`
	}
	if json.Unmarshal(b, &e) != nil {
		return time.Time{}, time.Time{}
	}
	return e.UpdatedAt, e.Expires
}
