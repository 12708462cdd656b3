package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// Permissions of what acp-guard creates.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700
)

// How says what Open does with an existing file.
type How int

const (
	// New creates the file and refuses one that exists (O_EXCL).
	New How = iota
	// Append creates the file or appends to an existing one.
	Append
	// Truncate creates the file or empties an existing one.
	Truncate
)

// SymlinkError reports a symbolic link where acp-guard was to write.
type SymlinkError struct {
	Path string
}

func (e *SymlinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link; refusing to write through it (name the target itself)", e.Path)
}

// ExistsError reports an existing file that Open was told not to touch.
type ExistsError struct {
	Path string
}

func (e *ExistsError) Error() string { return fmt.Sprintf("%s already exists", e.Path) }

// Open opens path for writing as how says, without following a symbolic
// link in its final component and without creating directories. The file
// is opened read-write, so that a caller may inspect what an appended file
// already holds (see [EndsInNewline]).
func Open(path string, how How) (*os.File, error) {
	flag := os.O_RDWR | os.O_CREATE
	switch how {
	case New:
		flag |= os.O_EXCL
	case Append:
		flag |= os.O_APPEND
	case Truncate:
		// Truncated after the checks below: a directory or a symlink
		// must be refused before anything is emptied.
	default:
		return nil, fmt.Errorf("safefile: unknown mode %d", how)
	}
	f, err := platform.OpenFile(path, flag, FileMode)
	if err != nil {
		return nil, explain(path, err)
	}
	if err := check(f, path, how); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// explain turns the errors of a refused open into ones naming the reason.
func explain(path string, err error) error {
	switch {
	case errors.Is(err, platform.ELOOP):
		return &SymlinkError{Path: path}
	case errors.Is(err, fs.ErrExist):
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return &SymlinkError{Path: path}
		}
		return &ExistsError{Path: path}
	case errors.Is(err, platform.EISDIR):
		return fmt.Errorf("%s is a directory", path)
	case errors.Is(err, fs.ErrNotExist):
		if dir := filepath.Dir(path); !exists(dir) {
			return fmt.Errorf("cannot create %s: directory %s does not exist (acp-guard creates no directories for it)", path, dir)
		}
	}
	return err
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// check refuses what is not a file to write and narrows a regular file's
// permissions; a Truncate open is emptied only after it passed.
func check(f *os.File, path string, how How) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	switch {
	case fi.IsDir():
		return fmt.Errorf("%s is a directory", path)
	case !fi.Mode().IsRegular():
		return nil // a device or a FIFO: written as it is, never chmodded
	}
	if fi.Mode().Perm() != FileMode {
		if err := f.Chmod(FileMode); err != nil {
			return fmt.Errorf("%s: restricting permissions to 0600: %w", path, err)
		}
	}
	if how == Truncate {
		if err := f.Truncate(0); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// EndsInNewline reports whether f (a regular file opened by Open) is empty
// or ends in '\n'. A writer of a line-based log that finds it does not
// starts its next record on a fresh line, so a record torn by a crash is
// never glued to the next one.
func EndsInNewline(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() == 0 {
		return true, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], fi.Size()-1); err != nil && err != io.EOF {
		return false, err
	}
	return last[0] == '\n', nil
}

// MkdirPrivate creates dir and any missing parents with mode 0700 exactly
// (regardless of umask) and leaves existing directories alone. It refuses a
// dir that is a symbolic link, or that exists and is not a directory.
func MkdirPrivate(dir string) error {
	dir = filepath.Clean(dir)
	var missing []string
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err == nil {
			if p == dir && fi.Mode()&fs.ModeSymlink != 0 {
				return &SymlinkError{Path: p}
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				// A link above the directory acp-guard owns is the
				// operator's layout (e.g. ~/.local → another disk).
				fi, err = os.Stat(p)
			}
		}
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s is not a directory", p)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := mkdir(missing[i]); err != nil {
			return err
		}
	}
	// Created by someone else between the look and the mkdir: the
	// leaf must still be a directory and not a link.
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &SymlinkError{Path: dir}
	}
	return nil
}

func mkdir(p string) error {
	if err := os.Mkdir(p, DirMode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // created concurrently by someone else: not ours to chmod
		}
		return err
	}
	return os.Chmod(p, DirMode)
}
