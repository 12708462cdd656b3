package circuit

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// File names of the embedded store inside the state directory.
const (
	FileName     = "circuits.json"
	LockFileName = "circuits.lock"
)

// FileFormat names the embedded store's document format (see doc.go).
const FileFormat = "acp-guard.circuits/1"

// fileRetain: records untouched this long behind the newest one are
// dropped on the next write unless still open. The document is read
// whole, so it is bounded (kvstore's defaults: 8 MiB, and past 4096
// records the oldest go).
const fileRetain = 48 * time.Hour

// FileStore is the embedded store: one JSON document in the state
// directory (a kvstore.File: replaced atomically under an flock(2), read
// without a lock, 0600 files in a 0700 directory, no symbolic links
// followed), each entry {"rev":R,"record":{…}}.
type FileStore struct {
	kvStore
	file *kvstore.File
}

// OpenFileStore opens (creating as needed) the embedded store in dir.
func OpenFileStore(dir string) (*FileStore, error) {
	f, err := kvstore.OpenFile(dir, kvstore.FileOptions{
		Name: FileName, LockName: LockFileName, Format: FileFormat, Member: "record", Times: recordTimes,
	})
	if err != nil {
		return nil, fmt.Errorf("circuit store: %w", err)
	}
	return &FileStore{newKVStore(f), f}, nil
}

// Path is the store document's path.
func (s *FileStore) Path() string { return s.file.Path() }

// recordTimes is the file store's pruning rule: a record untouched for
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
