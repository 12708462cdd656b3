package held

import (
	"context"
	"errors"
	"fmt"

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
// values of a revisioned key-value store (internal/kvstore), its errors in
// this package's terms.
type kvStore struct{ kv kvstore.Store }

// Get implements Store.
func (s kvStore) Get(ctx context.Context, id string) (*Entry, uint64, error) {
	b, rev, err := s.kv.Get(ctx, id)
	if err != nil || b == nil {
		return nil, 0, storeErr(err)
	}
	e, err := decodeEntry(b)
	if err != nil {
		return nil, 0, err
	}
	return &e, rev, nil
}

// CompareAndSwap implements Store.
func (s kvStore) CompareAndSwap(ctx context.Context, id string, e Entry, rev uint64) error {
	b, err := encodeEntry(e)
	if err != nil {
		return fmt.Errorf("held store: encoding: %w", err)
	}
	return storeErr(s.kv.CompareAndSwap(ctx, id, b, rev))
}

// List implements Store.
func (s kvStore) List(ctx context.Context, prefix string) ([]Stored, error) {
	items, err := s.kv.List(ctx, prefix)
	if err != nil {
		return nil, storeErr(err)
	}
	var out []Stored
	for _, it := range items {
		if st, ok := stored(it); ok {
			out = append(out, st)
		}
	}
	return out, nil
}

// Watch implements Store.
func (s kvStore) Watch(prefix string, fn func(Stored)) (func(), error) {
	stop, err := s.kv.Watch(prefix, func(it kvstore.Item) {
		if st, ok := stored(it); ok {
			fn(st)
		}
	})
	return stop, storeErr(err)
}

// Close implements Store.
func (s kvStore) Close() error { return s.kv.Close() }

// stored decodes an item; one of another format is skipped.
func stored(it kvstore.Item) (Stored, bool) {
	e, err := decodeEntry(it.Value)
	if err != nil {
		return Stored{}, false
	}
	return Stored{ID: it.Key, Rev: it.Rev, Entry: e}, true
}

// storeErr says a key-value store's error in this package's terms.
func storeErr(err error) error {
	var ferr *kvstore.FormatError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kvstore.ErrConflict):
		return ErrConflict
	case errors.As(err, &ferr):
		return fmt.Errorf("%w: %w", ErrFormat, ferr)
	}
	return fmt.Errorf("held store: %w", err)
}
