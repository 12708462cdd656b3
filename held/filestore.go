package held

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/acp-guard/acp-guard/internal/safefile"
)

// File names of the file store inside the state directory.
const (
	FileName     = "held.json"
	LockFileName = "held.lock"
)

// FileFormat names the file store's document format (see doc.go).
const FileFormat = "acp-guard.held/1"

// Bounds of the file store: the document is read whole, so it is kept
// small. On every write, entries that expired before the newest entry's
// update go, then the oldest beyond fileMaxEntries.
const (
	fileMaxBytes   = 8 << 20
	fileMaxEntries = 4096
	fileLockPoll   = 2 * time.Millisecond
	// filePoll is how often a watch looks at the document's metadata (a
	// stat; the document is read only when it changed).
	filePoll = 200 * time.Millisecond
)

// FileStore keeps held-prompt entries in one JSON document in the state
// directory, shared by every acp-guard process of the user on the machine:
// written under an flock(2) on a separate lock file (and a mutex per
// handle), replaced atomically (safefile.ReplaceDocument), read without a
// lock. The circuits' file store works the same way (circuit/doc.go).
type FileStore struct {
	path string
	mu   sync.Mutex // held around the flock by this handle's writers
	lock *flock.Flock
}

type fileDoc struct {
	Format  string               `json:"format"`
	Seq     uint64               `json:"seq"` // last revision handed out
	Entries map[string]fileEntry `json:"entries"`
}

type fileEntry struct {
	Rev   uint64 `json:"rev"`
	Entry Entry  `json:"entry"`
}

// errCorrupt marks a document that is not JSON or too large: the next
// write replaces it.
var errCorrupt = fmt.Errorf("%w: corrupt document", ErrFormat)

// OpenFileStore opens (creating as needed) the file store in dir.
func OpenFileStore(dir string) (*FileStore, error) {
	if dir == "" {
		return nil, errors.New("held store: empty state directory")
	}
	if err := safefile.MkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("held store: creating state directory: %w", err)
	}
	lock := flock.New(filepath.Join(dir, LockFileName),
		flock.SetFlag(os.O_CREATE|os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC),
		flock.SetPermissions(safefile.FileMode))
	return &FileStore{path: filepath.Join(dir, FileName), lock: lock}, nil
}

// Path is the document's path.
func (s *FileStore) Path() string { return s.path }

// Get implements Store.
func (s *FileStore) Get(_ context.Context, id string) (*Entry, uint64, error) {
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
	return &e.Entry, e.Rev, checkVersion(e.Entry)
}

// CompareAndSwap implements Store.
func (s *FileStore) CompareAndSwap(ctx context.Context, id string, e Entry, rev uint64) error {
	e.Version = EntryVersion
	return s.write(ctx, func(doc *fileDoc) error {
		if doc.Entries[id].Rev != rev {
			return ErrConflict
		}
		doc.Seq++
		doc.Entries[id] = fileEntry{Rev: doc.Seq, Entry: e}
		return nil
	})
}

// List implements Store.
func (s *FileStore) List(_ context.Context, prefix string) ([]Stored, error) {
	doc, err := s.read()
	if errors.Is(err, errCorrupt) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return doc.under(prefix), nil
}

func (doc *fileDoc) under(prefix string) []Stored {
	var out []Stored
	for id, e := range doc.Entries {
		if strings.HasPrefix(id, prefix) && checkVersion(e.Entry) == nil {
			out = append(out, Stored{ID: id, Rev: e.Rev, Entry: e.Entry})
		}
	}
	slices.SortFunc(out, func(a, b Stored) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Watch implements Store: a goroutine looks at the document's metadata
// every filePoll and, when it changed, reads it and passes every entry
// under prefix whose revision it has not passed yet to fn. stop ends the
// goroutine and waits for it.
func (s *FileStore) Watch(prefix string, fn func(Stored)) (func(), error) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		var last fileStamp
		seen := map[string]uint64{}
		t := time.NewTicker(filePoll)
		defer t.Stop()
		for {
			if st := s.stamp(); st != last {
				last = st
				s.passChanged(prefix, seen, fn)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-exited }) }, nil
}

// passChanged reads the document and passes the entries under prefix
// whose revision changed since seen says.
func (s *FileStore) passChanged(prefix string, seen map[string]uint64, fn func(Stored)) {
	doc, err := s.read()
	if err != nil {
		return
	}
	for _, st := range doc.under(prefix) {
		if seen[st.ID] != st.Rev {
			seen[st.ID] = st.Rev
			fn(st)
		}
	}
}

// fileStamp is what a watch compares: the document's identity and shape.
type fileStamp struct {
	ino, size, mtime int64
}

func (s *FileStore) stamp() fileStamp {
	fi, err := os.Lstat(s.path)
	if err != nil {
		return fileStamp{}
	}
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = int64(sys.Ino)
	}
	return st
}

// Close implements Store; it releases the lock file handle.
func (s *FileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lock.Close()
}

// write runs change on the current document under both locks and replaces
// the file when change succeeds. A corrupt document is replaced by a fresh
// one (held entries are soft state).
func (s *FileStore) write(ctx context.Context, change func(*fileDoc) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok, err := s.lock.TryLockContext(ctx, fileLockPoll)
	if !ok && (err == nil || errors.Is(err, context.DeadlineExceeded)) {
		// Other writers held the lock for the whole call: contention.
		return fmt.Errorf("held store: locking %s: busy: %w", s.lock.Path(), ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("held store: locking %s: %w", s.lock.Path(), err)
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
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("held store: encoding: %w", err)
	}
	if err := safefile.ReplaceDocument(s.path, b); err != nil {
		return fmt.Errorf("held store: %w", err)
	}
	return nil
}

// read loads the document; a missing file is an empty document.
func (s *FileStore) read() (*fileDoc, error) {
	doc := &fileDoc{Format: FileFormat, Entries: map[string]fileEntry{}}
	b, err := safefile.ReadDocument(s.path, fileMaxBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return doc, nil
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	case err != nil:
		return nil, fmt.Errorf("held store: %w", err)
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

// prune drops the entries that expired before the newest update in the
// document (a writer's recent clock: prune reads none itself), then the
// oldest beyond fileMaxEntries.
func prune(doc *fileDoc) {
	var newest time.Time
	for _, e := range doc.Entries {
		if e.Entry.UpdatedAt.After(newest) {
			newest = e.Entry.UpdatedAt
		}
	}
	for id, e := range doc.Entries {
		if e.Entry.Expires.Before(newest) {
			delete(doc.Entries, id)
		}
	}
	if over := len(doc.Entries) - fileMaxEntries; over > 0 {
		ids := make([]string, 0, len(doc.Entries))
		for id := range doc.Entries {
			ids = append(ids, id)
		}
		slices.SortFunc(ids, func(a, b string) int {
			return doc.Entries[a].Entry.UpdatedAt.Compare(doc.Entries[b].Entry.UpdatedAt)
		})
		for _, id := range ids[:over] {
			delete(doc.Entries, id)
		}
	}
}
