package circuit

import (
	"context"
	"errors"
)

// Store keeps circuit records by id (Key.ID) with a revision per record,
// so that every change is a compare-and-swap. Implementations: FileStore
// (embedded default), NATSStore (JetStream key-value), and none at all
// (a nil Store in Config: circuits off). All methods are safe for
// concurrent use.
type Store interface {
	// Get returns the record stored under id and its revision, or
	// (nil, 0, nil) when there is none.
	Get(ctx context.Context, id string) (*Record, uint64, error)
	// CompareAndSwap stores rec under id if the stored revision is still
	// rev (0: if there is no record), else fails with ErrConflict.
	CompareAndSwap(ctx context.Context, id string, rec Record, rev uint64) error
	// List returns every stored record (for `acp-guard circuits`).
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
