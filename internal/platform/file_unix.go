//go:build unix

package platform

import (
	"os"
	"syscall"
)

const noFollowFlags = syscall.O_NOFOLLOW | syscall.O_CLOEXEC

const privateNote = "files 0600, folders 0700"

func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|noFollowFlags, perm)
}

func fileID(fi os.FileInfo) uint64 {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Ino)
	}
	return 0
}

// LockFile takes an exclusive lock on f, waiting for it (flock).
func LockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

// UnlockFile releases LockFile's lock.
func UnlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
