package held

import (
	"context"
	"errors"

	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// Stored is an entry with its id and revision.
type Stored struct {
	ID    string
	Rev   uint64
	Entry Entry
}

// Store keeps held-prompt entries by id with a revision per entry, so that
// every change is a compare-and-swap. Implementations: FileStore (the
// state directory) and NATSStore (a JetStream key-value bucket). All
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

// kvStore is every Store: entries in their stored format (entry.go) as the
// values of a revisioned key-value store (internal/kvstore).
type kvStore struct{ t *kvstore.Typed[Entry] }

func newKVStore(kv kvstore.Store) kvStore {
	return kvStore{&kvstore.Typed[Entry]{KV: kv, Encode: encodeEntry, Decode: decodeEntry,
		Conflict: ErrConflict, Format: ErrFormat, What: "held store"}}
}

// Get implements Store.
func (s kvStore) Get(ctx context.Context, id string) (*Entry, uint64, error) { return s.t.Get(ctx, id) }

// CompareAndSwap implements Store.
func (s kvStore) CompareAndSwap(ctx context.Context, id string, e Entry, rev uint64) error {
	return s.t.CompareAndSwap(ctx, id, e, rev)
}

// List implements Store.
func (s kvStore) List(ctx context.Context, prefix string) ([]Stored, error) {
	es, err := s.t.List(ctx, prefix)
	var out []Stored
	for _, e := range es {
		out = append(out, stored(e))
	}
	return out, err
}

// Watch implements Store.
func (s kvStore) Watch(prefix string, fn func(Stored)) (func(), error) {
	return s.t.Watch(prefix, func(e kvstore.Entry[Entry]) { fn(stored(e)) })
}

// Close implements Store.
func (s kvStore) Close() error { return s.t.Close() }

func stored(e kvstore.Entry[Entry]) Stored { return Stored{ID: e.Key, Rev: e.Rev, Entry: e.Value} }
