package kvstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/internal/safefile"
)

// Defaults of FileOptions.
const (
	DefaultMaxBytes   = 8 << 20
	DefaultMaxEntries = 4096
	DefaultPoll       = 200 * time.Millisecond
	fileLockPoll      = 2 * time.Millisecond
)

// FileOptions describes one file store's document (doc.go, "The file
// document").
type FileOptions struct {
	Name     string // the document's file name in the directory
	LockName string // the lock file's name beside it
	Format   string // the document's "format" member; a document of another is ErrFormat
	Member   string // the member of an entry that holds its value
	// MaxBytes bounds the document (a larger one reads as corrupt);
	// 0: DefaultMaxBytes.
	MaxBytes int64
	// MaxEntries bounds the entries a write leaves (the oldest by update
	// go first); 0: DefaultMaxEntries.
	MaxEntries int
	// Times returns a value's last update and the instant it expires. A
	// write drops every value that expired before the newest update in
	// the document (a writer's recent clock: the store reads none), then
	// the oldest beyond MaxEntries. nil: nothing expires, and the entries
	// beyond MaxEntries go in key order.
	Times func(value []byte) (updated, expires time.Time)
	// Poll is how often a watch looks at the document's metadata (the
	// document is read only when it changed); 0: DefaultPoll.
	Poll time.Duration
}

// File keeps every value in one JSON document in a directory, shared by
// every process of the user on the machine: writers take an exclusive
// flock(2) on a lock file beside it (github.com/gofrs/flock) and a mutex
// per handle (an flock belongs to an open file, so one handle must not be
// shared unlocked), re-read, swap and replace the document atomically
// (safefile.ReplaceDocument); readers take no lock. Files are 0600 in a
// 0700 directory, opened without following symbolic links.
type File struct {
	path string
	o    FileOptions
	mu   sync.Mutex // held around the flock by this handle's writers
	lock *flock.Flock
}

// errCorrupt marks a document that is not JSON or too large: it reads as
// empty and the next write replaces it (what the stores keep is soft
// state).
var errCorrupt = errors.New("corrupt document")

// fileDoc is the document with its values left encoded.
type fileDoc struct {
	Format  string                                `json:"format"`
	Seq     uint64                                `json:"seq"` // last revision handed out
	Entries map[string]map[string]json.RawMessage `json:"entries"`
}

// OpenFile opens (creating as needed, 0700) the directory dir for the
// document o describes.
func OpenFile(dir string, o FileOptions) (*File, error) {
	if dir == "" {
		return nil, errors.New("empty state directory")
	}
	if o.Name == "" || o.LockName == "" || o.Format == "" || o.Member == "" || o.Member == "rev" {
		return nil, fmt.Errorf("file store options %+v: want a name, a lock name, a format and a member other than rev", o)
	}
	o.MaxBytes = orDefault(o.MaxBytes, DefaultMaxBytes)
	o.MaxEntries = orDefault(o.MaxEntries, DefaultMaxEntries)
	o.Poll = orDefault(o.Poll, DefaultPoll)
	if err := safefile.MkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("creating state directory: %w", err)
	}
	lock := flock.New(filepath.Join(dir, o.LockName),
		flock.SetFlag(os.O_CREATE|os.O_RDONLY|platform.NoFollowFlags),
		flock.SetPermissions(safefile.FileMode))
	return &File{path: filepath.Join(dir, o.Name), o: o, lock: lock}, nil
}

// orDefault is v, or def when v is not positive.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Path is the document's path.
func (s *File) Path() string { return s.path }

// Get implements Store. A corrupt document reads as empty.
func (s *File) Get(_ context.Context, key string) ([]byte, uint64, error) {
	doc, err := s.read()
	if errors.Is(err, errCorrupt) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	it, ok := s.item(doc, key)
	if !ok {
		return nil, 0, nil
	}
	return it.Value, it.Rev, nil
}

// CompareAndSwap implements Store. value must be JSON other than null
// (it is stored compacted, as a member of the document). A corrupt
// document is replaced.
func (s *File) CompareAndSwap(ctx context.Context, key string, value []byte, rev uint64) error {
	var compact bytes.Buffer
	if err := json.Compact(&compact, value); err != nil {
		return fmt.Errorf("value of %s: %w", key, err)
	}
	if compact.String() == "null" {
		return fmt.Errorf("value of %s: null (it would read as absent)", key)
	}
	return s.write(ctx, func(doc *fileDoc) error {
		if cur, _ := s.item(doc, key); cur.Rev != rev {
			return ErrConflict
		}
		doc.Seq++
		doc.Entries[key] = map[string]json.RawMessage{
			"rev":      strconv.AppendUint(nil, doc.Seq, 10),
			s.o.Member: compact.Bytes(),
		}
		return nil
	})
}

// Delete implements Store.
func (s *File) Delete(ctx context.Context, key string) error {
	return s.write(ctx, func(doc *fileDoc) error {
		delete(doc.Entries, key)
		return nil
	})
}

// List implements Store. A corrupt document reads as empty.
func (s *File) List(_ context.Context, prefix string) ([]Item, error) {
	doc, err := s.read()
	if errors.Is(err, errCorrupt) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Item
	for key := range doc.Entries {
		if under(key, prefix) {
			if it, ok := s.item(doc, key); ok {
				out = append(out, it)
			}
		}
	}
	return sortItems(out), nil
}

// item is the entry under key. An entry without a revision or a value is
// absent (no store wrote it; the next write drops it).
func (s *File) item(doc *fileDoc, key string) (Item, bool) {
	e, ok := doc.Entries[key]
	if !ok {
		return Item{}, false
	}
	rev, err := strconv.ParseUint(string(e["rev"]), 10, 64)
	v := e[s.o.Member]
	if err != nil || rev == 0 || len(v) == 0 || string(v) == "null" {
		return Item{}, false
	}
	return Item{Key: key, Rev: rev, Value: v}, true
}

// Watch implements Store: a goroutine looks at the document's metadata
// every Poll and, when it changed, reads it and passes the items under
// prefix whose revision it has not passed yet. stop ends the goroutine
// and waits for it.
func (s *File) Watch(prefix string, fn func(Item)) (func(), error) {
	t := time.NewTicker(s.o.Poll)
	var last fileStamp
	next := func(done <-chan struct{}) (bool, bool) {
		select {
		case <-done:
			t.Stop()
			return false, false
		case <-t.C:
		}
		st := s.stamp()
		changed := st != last
		last = st
		return changed, true
	}
	last = s.stamp()
	return pollWatch(next, func() ([]Item, error) { return s.List(context.Background(), prefix) }, fn), nil
}

// fileStamp is what a watch compares: the document's identity and shape.
type fileStamp struct {
	ino, size, mtime int64
}

func (s *File) stamp() fileStamp {
	fi, err := os.Lstat(s.path)
	if err != nil {
		return fileStamp{}
	}
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	st.ino = int64(platform.FileID(fi))
	return st
}

// Close implements Store; it releases the lock file handle.
func (s *File) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lock.Close()
}

// write runs change on the current document under both locks and replaces
// the file when change succeeds. A corrupt document is replaced by a fresh
// one.
func (s *File) write(ctx context.Context, change func(*fileDoc) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok, err := s.lock.TryLockContext(ctx, fileLockPoll)
	if !ok && (err == nil || errors.Is(err, context.DeadlineExceeded)) {
		// Other writers held the lock for the whole call: contention (an
		// flock ends with its holder's process), not a failed store.
		return fmt.Errorf("locking %s: busy: %w", s.lock.Path(), ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("locking %s: %w", s.lock.Path(), err)
	}
	defer s.lock.Unlock()
	doc, err := s.read()
	if errors.Is(err, errCorrupt) {
		doc = s.empty()
	} else if err != nil {
		return err
	}
	if err := change(doc); err != nil {
		return err
	}
	s.prune(doc)
	return safefile.ReplaceDocument(s.path, s.encode(doc))
}

func (s *File) empty() *fileDoc {
	return &fileDoc{Format: s.o.Format, Entries: map[string]map[string]json.RawMessage{}}
}

// read loads the document; a missing file is an empty document.
func (s *File) read() (*fileDoc, error) {
	doc := s.empty()
	b, err := safefile.ReadDocument(s.path, s.o.MaxBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return doc, nil
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	case err != nil:
		return nil, err
	}
	if err := json.Unmarshal(b, doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errCorrupt, s.path, err)
	}
	if doc.Format != s.o.Format {
		return nil, &FormatError{Path: s.path, Format: doc.Format, Want: s.o.Format}
	}
	if doc.Entries == nil {
		doc.Entries = map[string]map[string]json.RawMessage{}
	}
	return doc, nil
}

// encode writes the document as encoding/json would write its typed form
// — members in this order, entries by key, each {"rev":R,"<member>":value}
// — without decoding the values again. There is no fsync: the rename
// alone makes every reader see a whole document, even when a process dies
// mid-write; only a power loss could leave an empty or torn file, which
// reads as corrupt (empty), acceptable for soft state, and the lock is
// held for microseconds, not a disk flush.
func (s *File) encode(doc *fileDoc) []byte {
	var b bytes.Buffer
	str := func(v string) {
		q, _ := json.Marshal(v) // a string always encodes
		b.Write(q)
	}
	b.WriteString(`{"format":`)
	str(doc.Format)
	b.WriteString(`,"seq":`)
	b.WriteString(strconv.FormatUint(doc.Seq, 10))
	b.WriteString(`,"entries":{`)
	sep := ""
	for _, key := range slices.Sorted(maps.Keys(doc.Entries)) {
		it, ok := s.item(doc, key)
		if !ok {
			continue // prune dropped it already: a writer keeps none
		}
		b.WriteString(sep)
		sep = ","
		str(key)
		b.WriteString(`:{"rev":`)
		b.WriteString(strconv.FormatUint(it.Rev, 10))
		b.WriteByte(',')
		str(s.o.Member)
		b.WriteByte(':')
		b.Write(it.Value)
		b.WriteByte('}')
	}
	b.WriteString(`}}`)
	return b.Bytes()
}

// prune drops the entries no store wrote (no revision or no value), the
// values that expired before the newest update in the document, then the
// oldest beyond MaxEntries. It reads no clock, so fake-clock tests and
// real runs prune alike.
func (s *File) prune(doc *fileDoc) {
	type stamp struct{ updated, expires time.Time }
	stamps := make(map[string]stamp, len(doc.Entries))
	var newest time.Time
	for key := range doc.Entries {
		it, ok := s.item(doc, key)
		if !ok {
			delete(doc.Entries, key)
			continue
		}
		var st stamp
		if s.o.Times != nil {
			st.updated, st.expires = s.o.Times(it.Value)
		}
		stamps[key] = st
		if st.updated.After(newest) {
			newest = st.updated
		}
	}
	if s.o.Times != nil {
		for key, st := range stamps {
			if st.expires.Before(newest) {
				delete(doc.Entries, key)
			}
		}
	}
	if over := len(doc.Entries) - s.o.MaxEntries; over > 0 {
		keys := slices.Sorted(maps.Keys(doc.Entries))
		slices.SortStableFunc(keys, func(a, b string) int { return stamps[a].updated.Compare(stamps[b].updated) })
		for _, key := range keys[:over] {
			delete(doc.Entries, key)
		}
	}
}

// fileBackend: "" or "file", the schema's document in Options.Dir.
var fileBackend = Backend{
	Kind: KindFile, Want: string(KindFile),
	Match: func(spec string) bool { return spec == "" || spec == string(KindFile) },
	Open: func(_ string, s Schema, o Options) (Store, error) {
		dir, err := o.dir()
		if err != nil {
			return nil, err
		}
		return OpenFile(dir, s.File)
	},
}

// String says where the store keeps its values.
func (s *File) String() string { return "file " + s.path }
