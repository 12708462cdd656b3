package presence

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// File names of the file store in the state directory, and its format.
const (
	FileName     = "presence.json"
	LockFileName = "presence.lock"
	FileFormat   = "acp-guard.presence/1"
	// The file document's bounds: a record is < 2 KiB with every field at
	// its bound and MaxErrors rows.
	fileMaxBytes   = 1 << 20
	fileMaxEntries = 2048
)

// DefaultBucket is the NATS key-value bucket of presence records.
const DefaultBucket = "acp_guard_presence"

const natsMaxValue = 16 << 10

// records are the presence records over any shared backend
// (kvstore.View), in the stored format of record.go.
var records = &kvstore.View[Record]{Schema: kvstore.Schema{
	What: "presence store", Shared: true,
	File: kvstore.FileOptions{Name: FileName, LockName: LockFileName, Format: FileFormat, Member: "presence",
		MaxBytes: fileMaxBytes, MaxEntries: fileMaxEntries, Times: recordTimes},
	NATS: kvstore.NATSOptions{Bucket: DefaultBucket, Description: "acp-guard session presence (" + FileFormat + " records)",
		TTL: Lease, MaxValue: natsMaxValue},
}, Encode: encodeRecord, Decode: decodeRecord, Conflict: ErrConflict, Format: ErrFormat}

// ErrConflict is returned by Put when the record changed since it was
// read.
var ErrConflict = errors.New("presence: record changed concurrently")

// ErrFormat wraps a file document of another format.
var ErrFormat = errors.New("presence: unsupported document format")

// Store keeps presence records by key with a revision each: a file in the
// state directory or a NATS bucket (doc.go, "Stores"). Safe for
// concurrent use.
type Store struct{ t *kvstore.Typed[Record] }

// Options is how a process opens its stores (kvstore.Options, the one
// set shared with circuit and held).
type Options = kvstore.Options

// OpenStore opens the store a --circuits value names (kvstore.Open):
// "" or "file" → the file in o.Dir (created as needed, 0700); a nats://
// or tls:// URL → the bucket DefaultBucket, whose max age is Lease
// unless o.TTL says otherwise; "off" or "memory" → nil, nil (no
// presence). An unreachable server is not an error here.
func OpenStore(spec string, o Options) (*Store, error) {
	t, err := records.Open(spec, o)
	if t == nil {
		return nil, err
	}
	return &Store{t}, nil
}

// NewMemoryStore is a store of this process only (tests).
func NewMemoryStore() *Store { return &Store{records.Over(kvstore.NewMemory())} }

// String says where the store keeps its records.
func (s *Store) String() string { return s.t.String() }

// Get returns the record under key and its revision, or (nil, 0, nil).
func (s *Store) Get(ctx context.Context, key string) (*Record, uint64, error) {
	return s.t.Get(ctx, key)
}

// Put stores r, bounded, under key if the stored revision is still rev
// (0: none), else fails with ErrConflict.
func (s *Store) Put(ctx context.Context, key string, r Record, rev uint64) error {
	r.Bound()
	return s.t.CompareAndSwap(ctx, key, r, rev)
}

// Delete removes the record under key.
func (s *Store) Delete(ctx context.Context, key string) error { return s.t.Delete(ctx, key) }

// Live lists the records under prefix (Prefix(namespace); "p." for every
// namespace) whose lease still runs at now, by host, pid and holder.
func (s *Store) Live(ctx context.Context, prefix string, now time.Time) ([]Record, error) {
	es, err := s.t.List(ctx, prefix)
	var out []Record
	for _, e := range es {
		if e.Value.LiveAt(now) {
			out = append(out, e.Value)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		if a.PID != b.PID {
			return a.PID < b.PID
		}
		return a.Holder < b.Holder
	})
	return out, err
}

// Close closes the store.
func (s *Store) Close() error { return s.t.Close() }
