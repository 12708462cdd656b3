package circuit

import (
	"cmp"
	"context"
	"errors"
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
func NewMemoryStore() Store { return newKVStore(kvstore.NewMemory()) }

// kvStore is every Store: records in their stored format (record.go) as
// the values of a revisioned key-value store (internal/kvstore).
type kvStore struct{ t *kvstore.Typed[Record] }

func newKVStore(kv kvstore.Store) kvStore {
	return kvStore{&kvstore.Typed[Record]{KV: kv, Encode: encodeRecord, Decode: decodeRecord,
		Conflict: ErrConflict, Format: ErrFormat, What: "circuit store"}}
}

// Get implements Store.
func (s kvStore) Get(ctx context.Context, id string) (*Record, uint64, error) {
	return s.t.Get(ctx, id)
}

// CompareAndSwap implements Store.
func (s kvStore) CompareAndSwap(ctx context.Context, id string, rec Record, rev uint64) error {
	return s.t.CompareAndSwap(ctx, id, rec, rev)
}

// List implements Store.
func (s kvStore) List(ctx context.Context) ([]Record, error) {
	es, err := s.t.List(ctx, idPrefix)
	out := make([]Record, 0, len(es))
	for _, e := range es {
		out = append(out, e.Value)
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.Key.String(), b.Key.String()) })
	return out, err
}

// Delete implements Store.
func (s kvStore) Delete(ctx context.Context, id string) error { return s.t.Delete(ctx, id) }

// Close implements Store.
func (s kvStore) Close() error { return s.t.Close() }
