package held

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// File names of the file store inside the state directory.
const (
	FileName     = "held.json"
	LockFileName = "held.lock"
)

// FileFormat names the file store's document format (see doc.go).
const FileFormat = "acp-guard.held/1"

// FileStore keeps held-prompt entries in one JSON document in the state
// directory, shared by every acp-guard process of the user on the machine
// (a kvstore.File, as the circuits' file store: written under an flock(2),
// replaced atomically, read without a lock), each entry
// {"rev":R,"entry":{…}}. The document is read whole, so it is bounded
// (kvstore's defaults: 8 MiB; on every write, entries that expired before
// the newest entry's update go, then the oldest beyond 4096), and a watch
// looks at its metadata every kvstore.DefaultPoll (a stat; the document
// is read only when it changed).
type FileStore struct {
	kvStore
	file *kvstore.File
}

// OpenFileStore opens (creating as needed) the file store in dir.
func OpenFileStore(dir string) (*FileStore, error) {
	f, err := kvstore.OpenFile(dir, kvstore.FileOptions{
		Name: FileName, LockName: LockFileName, Format: FileFormat, Member: "entry",
		Times: entryTimes,
	})
	if err != nil {
		return nil, fmt.Errorf("held store: %w", err)
	}
	return &FileStore{newKVStore(f), f}, nil
}

// Path is the document's path.
func (s *FileStore) Path() string { return s.file.Path() }

// entryTimes is the file store's pruning rule: an entry goes once it
// expired before the newest update in the document.
func entryTimes(b []byte) (updated, expires time.Time) {
	var e struct {
		Expires   time.Time `json:"expires"`
		UpdatedAt time.Time `json:"updatedAt"`
	}
	if json.Unmarshal(b, &e) != nil {
		return time.Time{}, time.Time{}
	}
	return e.UpdatedAt, e.Expires
}
