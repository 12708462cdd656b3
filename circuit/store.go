package circuit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// Store keeps circuit records by id (Key.ID) with a revision per record,
// so that every change is a compare-and-swap. OpenStore opens it over any
// backend of internal/kvstore (the file document, a NATS bucket, memory);
// a nil Store in Config is none at all (circuits off). All methods are
// safe for concurrent use.
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

// The circuits in every backend: the file document in the state
// directory (kvstore.File: replaced atomically under an flock(2), read
// without a lock, 0600 files in a 0700 directory, no symbolic links
// followed; each entry {"rev":R,"record":{…}}) and the NATS bucket (a
// record's key is Key.ID, "ns.<namespace>.<hash>", so a NATS permission
// on "$KV.<bucket>.ns.<namespace>.>" confines a tenant; its value the
// JSON record).
const (
	FileName      = "circuits.json"
	LockFileName  = "circuits.lock"
	FileFormat    = "acp-guard.circuits/1" // the document's format (see doc.go)
	DefaultBucket = "acp_guard_circuits"
	// DefaultBucketTTL is the bucket's max age: a circuit nobody wrote for
	// this long disappears (twice the longest cooldown).
	DefaultBucketTTL = 2 * DefaultMaxCooldown
	natsMaxValue     = 16 << 10 // a record is < 5 KiB even with every field at its bound and JSON-escaped
	// fileRetain: records untouched this long behind the newest one are
	// dropped on the next write unless still open. The document is read
	// whole, so it is bounded (kvstore's defaults: 8 MiB, and past 4096
	// records the oldest go).
	fileRetain = 48 * time.Hour
)

// records are the circuits over any backend (kvstore.View): the Schema
// above, the stored format of record.go.
var records = &kvstore.View[Record]{Schema: kvstore.Schema{
	What: "circuit store",
	File: kvstore.FileOptions{Name: FileName, LockName: LockFileName, Format: FileFormat, Member: "record", Times: recordTimes},
	NATS: kvstore.NATSOptions{Bucket: DefaultBucket, Description: "acp-guard circuits (" + FileFormat + " records)",
		TTL: DefaultBucketTTL, MaxValue: natsMaxValue},
}, Encode: encodeRecord, Decode: decodeRecord, Conflict: ErrConflict, Format: ErrFormat}

// Options is how a process opens its stores (kvstore.Options, the one
// set shared with held and presence): the state directory, a NATS
// connection to share or the name and client options to dial one, and
// the bucket name and max age instead of DefaultBucket and
// DefaultBucketTTL.
type Options = kvstore.Options

// OpenStore opens the store a --circuits value (or ACP_GUARD_CIRCUITS)
// names (kvstore.Open): "" or "file" → the document in o.Dir; "nats://…"
// or "tls://…" (comma-separated server URLs allowed) → the bucket
// DefaultBucket; "memory" → this process only; "off" → nil (circuits
// off). Anything else is an error naming the value, password hidden. An
// unreachable NATS server is not an error here: the client keeps
// reconnecting and operations fail with ErrStore until it answers.
func OpenStore(spec string, o Options) (Store, error) {
	t, err := records.Open(spec, o)
	if t == nil {
		return nil, err
	}
	return over(t), err
}

// over is the Store over t: a Pinger when its backend can be pinged (a
// replicated one: NATS), so that a late call is told from a lost one.
func over(t *kvstore.Typed[Record]) Store {
	if p, ok := t.KV.(Pinger); ok {
		return pingStore{kvStore{t}, p}
	}
	return kvStore{t}
}

// NewMemoryStore returns a store that keeps circuits in this process
// only, gone with it (--circuits memory: replayed and served sessions,
// which must not touch the circuits live sessions share).
func NewMemoryStore() Store { return kvStore{records.Over(kvstore.NewMemory())} }

// kvStore is every Store: records in their stored format (record.go) as
// the values of a revisioned key-value store (internal/kvstore); its
// Reconnects is the backend's, which Circuits' health follows.
type kvStore struct{ *kvstore.Typed[Record] }

// pingStore is a kvStore whose backend answers pings (Pinger).
type pingStore struct {
	kvStore
	p Pinger
}

// Ping implements Pinger.
func (s pingStore) Ping(ctx context.Context) error { return s.p.Ping(ctx) }

// List implements Store.
func (s kvStore) List(ctx context.Context) ([]Record, error) {
	es, err := s.Typed.List(ctx, idPrefix)
	out := make([]Record, 0, len(es))
	for _, e := range es {
		out = append(out, e.Value)
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.Key.String(), b.Key.String()) })
	return out, err
}

// recordTimes is the file document's pruning rule: a record untouched for
// fileRetain behind the newest one goes, an open one only once its
// cooldown ended that long ago too.
func recordTimes(b []byte) (updated, expires time.Time) {
	var r struct {
		OpenUntil time.Time `json:"openUntil"`
		UpdatedAt time.Time `json:"updatedAt"`
	}
	if json.Unmarshal(b, &r) != nil {
		return time.Time{}, time.Time{}
	}
	last := r.UpdatedAt
	if r.OpenUntil.After(last) {
		last = r.OpenUntil
	}
	return r.UpdatedAt, last.Add(fileRetain)
}
