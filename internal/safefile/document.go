package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// ErrTooLarge is wrapped by ReadDocument when a document exceeds its bound.
var ErrTooLarge = errors.New("larger than allowed")

// ReadDocument reads a whole small document acp-guard shares between its
// processes (the circuit and held-prompt stores in the state directory):
// opened without following a symbolic link, refused unless it is a regular
// file, and bounded by max bytes (ErrTooLarge beyond). A missing file is
// (nil, error wrapping fs.ErrNotExist).
func ReadDocument(path string, max int64) ([]byte, error) {
	f, err := platform.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w (%d bytes)", path, ErrTooLarge, max)
	}
	return b, nil
}

// ReplaceDocument replaces path with data atomically: it writes a new
// temporary file beside it (created exclusively, mode 0600, so never
// through a symbolic link) and renames it over path, so a reader sees the
// old or the new document, never a mix, even when the writer dies
// mid-write. It does not fsync: the documents it serves are soft state,
// and a writer holds their lock for a rename, not a disk flush.
func ReplaceDocument(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}
