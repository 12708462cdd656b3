package circuit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/acp-guard/acp-guard/internal/safefile"
)

// File names of the embedded store inside the state directory.
const (
	FileName     = "circuits.json"
	LockFileName = "circuits.lock"
)

// FileFormat names the embedded store's document format (see doc.go).
const FileFormat = "acp-guard.circuits/1"

// Bounds of the embedded store: the document is read whole, so it is kept
// small. Records untouched for fileRetain behind the newest one are dropped
// on the next write unless still open; past fileMaxEntries the oldest go.
const (
	fileMaxBytes   = 8 << 20
	fileMaxEntries = 4096
	fileRetain     = 48 * time.Hour
	fileLockPoll   = 2 * time.Millisecond
	fileMode       = 0o600
)

// FileStore is the embedded store: one JSON document in the state
// directory, replaced atomically (write a temporary file, rename),
// with writers serialised across processes by an flock(2) on a separate
// lock file (github.com/gofrs/flock) and within the process by a mutex
// (an flock is per open file, so one handle must not be shared unlocked).
// Readers take no lock: a rename is atomic, so they see the old or the new
// document. Every file is 0600, opened without following symlinks, in a
// 0700 directory.
type FileStore struct {
	dir  string
	path string
	mu   sync.Mutex // held around the flock by this handle's writers
	lock *flock.Flock
}

// errCorrupt marks a document that is not JSON or too large: the next
// write replaces it. A well-formed document of another format is left
// alone (a newer acp-guard may own it).
var errCorrupt = fmt.Errorf("%w: corrupt document", ErrFormat)

type fileDoc struct {
	Format  string               `json:"format"`
	Seq     uint64               `json:"seq"` // last revision handed out
	Entries map[string]fileEntry `json:"entries"`
}

type fileEntry struct {
	Rev    uint64 `json:"rev"`
	Record Record `json:"record"`
}

// OpenFileStore opens (creating as needed) the embedded store in dir.
func OpenFileStore(dir string) (*FileStore, error) {
	if dir == "" {
		return nil, errors.New("circuit store: empty state directory")
	}
	if err := safefile.MkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("circuit store: creating state directory: %w", err)
	}
	lock := flock.New(filepath.Join(dir, LockFileName),
		flock.SetFlag(os.O_CREATE|os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC),
		flock.SetPermissions(fileMode))
	return &FileStore{dir: dir, path: filepath.Join(dir, FileName), lock: lock}, nil
}

// Path is the store document's path.
func (s *FileStore) Path() string { return s.path }

// Get implements Store. A corrupt document reads as empty (the next write
// replaces it).
func (s *FileStore) Get(ctx context.Context, id string) (*Record, uint64, error) {
	doc, err := s.read()
	if errors.Is(err, errCorrupt) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	e, ok := doc.Entries[id]
	if !ok {
		return nil, 0, nil
	}
	return &e.Record, e.Rev, checkVersion(e.Record)
}

// CompareAndSwap implements Store.
func (s *FileStore) CompareAndSwap(ctx context.Context, id string, rec Record, rev uint64) error {
	rec.Version = RecordVersion
	return s.write(ctx, func(doc *fileDoc) error {
		if doc.Entries[id].Rev != rev {
			return ErrConflict
		}
		doc.Seq++
		doc.Entries[id] = fileEntry{Rev: doc.Seq, Record: rec}
		return nil
	})
}

// Delete implements Store.
func (s *FileStore) Delete(ctx context.Context, id string) error {
	return s.write(ctx, func(doc *fileDoc) error {
		delete(doc.Entries, id)
		return nil
	})
}

// List implements Store.
func (s *FileStore) List(ctx context.Context) ([]Record, error) {
	doc, err := s.read()
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(doc.Entries))
	for _, e := range doc.Entries {
		out = append(out, e.Record)
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.Key.String(), b.Key.String()) })
	return out, nil
}

// Close implements Store; it releases the lock file handle.
func (s *FileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lock.Close()
}

// write runs change on the current document under both locks and replaces
// the file when change succeeds. A corrupt document is replaced by a fresh
// one (circuits are soft state).
func (s *FileStore) write(ctx context.Context, change func(*fileDoc) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok, err := s.lock.TryLockContext(ctx, fileLockPoll)
	if !ok && (err == nil || errors.Is(err, context.DeadlineExceeded)) {
		// Other writers held the lock for the whole call: contention (an
		// flock ends with its holder's process), not a failed store.
		return fmt.Errorf("circuit store: locking %s: busy: %w", s.lock.Path(), ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("circuit store: locking %s: %w", s.lock.Path(), err)
	}
	defer s.lock.Unlock()
	doc, err := s.read()
	if errors.Is(err, errCorrupt) {
		doc = &fileDoc{Format: FileFormat, Entries: map[string]fileEntry{}}
	} else if err != nil {
		return err
	}
	if err := change(doc); err != nil {
		return err
	}
	prune(doc)
	return s.replace(doc)
}

// read loads the document; a missing file is an empty document.
func (s *FileStore) read() (*fileDoc, error) {
	doc := &fileDoc{Format: FileFormat, Entries: map[string]fileEntry{}}
	f, err := os.OpenFile(s.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return nil, fmt.Errorf("circuit store: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("circuit store: %s is not a regular file", s.path)
	}
	b, err := io.ReadAll(io.LimitReader(f, fileMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("circuit store: %w", err)
	}
	if len(b) > fileMaxBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", errCorrupt, s.path, fileMaxBytes)
	}
	if err := json.Unmarshal(b, doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errCorrupt, s.path, err)
	}
	if doc.Format != FileFormat {
		return nil, fmt.Errorf("%w: %s: format %q, want %q", ErrFormat, s.path, doc.Format, FileFormat)
	}
	if doc.Entries == nil {
		doc.Entries = map[string]fileEntry{}
	}
	return doc, nil
}

// replace writes doc to a new temporary file (created exclusively, so never
// through a symlink) and renames it over the document. It does not fsync:
// the rename alone makes every reader see a whole document, even when a
// process dies mid-write; only a power loss could leave an empty or torn
// file, which reads as corrupt, that is as "no circuits" — acceptable for
// soft state, and it keeps the lock held for microseconds, not a disk flush.
func (s *FileStore) replace(doc *fileDoc) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("circuit store: encoding: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, ".circuits-*.tmp") // O_EXCL, mode 0600
	if err != nil {
		return fmt.Errorf("circuit store: %w", err)
	}
	name := tmp.Name()
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, s.path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("circuit store: %w", err)
	}
	return nil
}

// prune drops records untouched for fileRetain behind the newest one (open
// ones only once their cooldown is that old too) and then the oldest
// beyond fileMaxEntries. It reads no clock, so fake-clock tests and real
// runs prune alike.
func prune(doc *fileDoc) {
	var newest time.Time
	for _, e := range doc.Entries {
		if e.Record.UpdatedAt.After(newest) {
			newest = e.Record.UpdatedAt
		}
	}
	horizon := newest.Add(-fileRetain)
	for id, e := range doc.Entries {
		r := e.Record
		if r.UpdatedAt.Before(horizon) && (r.Closed() || r.OpenUntil.Before(horizon)) {
			delete(doc.Entries, id)
		}
	}
	if over := len(doc.Entries) - fileMaxEntries; over > 0 {
		ids := make([]string, 0, len(doc.Entries))
		for id := range doc.Entries {
			ids = append(ids, id)
		}
		slices.SortFunc(ids, func(a, b string) int {
			return doc.Entries[a].Record.UpdatedAt.Compare(doc.Entries[b].Record.UpdatedAt)
		})
		for _, id := range ids[:over] {
			delete(doc.Entries, id)
		}
	}
}
