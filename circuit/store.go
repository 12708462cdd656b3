package circuit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// Store keeps circuit records by id (Key.ID) with a revision per record,
// so that every change is a compare-and-swap. Implementations: FileStore
// (embedded default), NATSStore (JetStream key-value), the memory store
// (NewMemoryStore: one process), and none at all (a nil Store in Config:
// circuits off). All methods are safe for concurrent use.
type Store interface {
	// Get returns the record stored under id and its revision, or
	// (nil, 0, nil) when there is none.
	Get(ctx context.Context, id string) (*Record, uint64, error)
	// CompareAndSwap stores rec under id if the stored revision is still
	// rev (0: if there is no record), else fails with ErrConflict.
	CompareAndSwap(ctx context.Context, id string, rec Record, rev uint64) error
	// List returns every stored record (for `acp-guard circuits`), in
	// key order; records of another format are skipped.
	List(ctx context.Context) ([]Record, error)
	// Delete removes the record under id (clearing a circuit by hand).
	Delete(ctx context.Context, id string) error
	Close() error
}

// ErrConflict is returned by CompareAndSwap when the record changed since
// it was read. Circuits re-reads and re-decides.
var ErrConflict = errors.New("circuit: record changed concurrently")

// ErrStore is wrapped by every error that means "the store could not
// answer": the decision that comes with it is the one a guard without
// circuits would take, and the caller logs the error and proceeds.
var ErrStore = errors.New("circuit: store unavailable")

// idPrefix starts every Key.ID: what List reads.
const idPrefix = "ns."

// NewMemoryStore returns a store that keeps circuits in this process
// only, gone with it (--circuits memory: replayed and served sessions,
// which must not touch the circuits live sessions share).
func NewMemoryStore() Store { return kvStore{kvstore.NewMemory()} }

// kvStore is every Store: records in their stored format (record.go) as
// the values of a revisioned key-value store (internal/kvstore), its
// errors in this package's terms.
type kvStore struct{ kv kvstore.Store }

// Get implements Store.
func (s kvStore) Get(ctx context.Context, id string) (*Record, uint64, error) {
	b, rev, err := s.kv.Get(ctx, id)
	if err != nil || b == nil {
		return nil, 0, storeErr(err)
	}
	r, err := decodeRecord(b)
	if err != nil {
		return nil, 0, err
	}
	return &r, rev, nil
}

// CompareAndSwap implements Store.
func (s kvStore) CompareAndSwap(ctx context.Context, id string, rec Record, rev uint64) error {
	b, err := encodeRecord(rec)
	if err != nil {
		return fmt.Errorf("circuit store: encoding: %w", err)
	}
	return storeErr(s.kv.CompareAndSwap(ctx, id, b, rev))
}

// List implements Store.
func (s kvStore) List(ctx context.Context) ([]Record, error) {
	items, err := s.kv.List(ctx, idPrefix)
	if err != nil {
		return nil, storeErr(err)
	}
	out := make([]Record, 0, len(items))
	for _, it := range items {
		if r, err := decodeRecord(it.Value); err == nil {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.Key.String(), b.Key.String()) })
	return out, nil
}

// Delete implements Store.
func (s kvStore) Delete(ctx context.Context, id string) error {
	return storeErr(s.kv.Delete(ctx, id))
}

// Close implements Store.
func (s kvStore) Close() error { return s.kv.Close() }

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
	return fmt.Errorf("circuit store: %w", err)
}
