//go:build windows

package platform

import (
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

const noFollowFlags = 0

// privateNote: Windows keeps no mode bits. Files and folders acp-guard
// creates inherit the ACL of the folder they are in; under the user's
// profile (%LocalAppData%, %AppData%, the defaults) that ACL gives access
// to the user, SYSTEM and the administrators only.
const privateNote = "on Windows: the ACL inherited from the folder (under the user's profile: the user, SYSTEM and administrators)"

func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	// A link is refused before anything is created through it (the
	// handle's attributes say so again below, for a link made meanwhile;
	// Lstat is what Wine, whose CreateFile follows links regardless,
	// gets right).
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&(os.ModeSymlink|os.ModeIrregular) != 0 {
		return nil, &os.PathError{Op: "open", Path: path, Err: syscall.ELOOP}
	}
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var access uint32
	switch flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_RDONLY:
		access = windows.GENERIC_READ
	case os.O_WRONLY:
		access = windows.GENERIC_WRITE
	case os.O_RDWR:
		access = windows.GENERIC_READ | windows.GENERIC_WRITE
	}
	if flag&os.O_APPEND != 0 {
		access &^= windows.GENERIC_WRITE
		access |= windows.FILE_APPEND_DATA | windows.FILE_WRITE_ATTRIBUTES | windows.FILE_WRITE_EA | windows.STANDARD_RIGHTS_WRITE | windows.SYNCHRONIZE
	}
	var create uint32
	switch {
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		create = windows.CREATE_NEW
	case flag&(os.O_CREATE|os.O_TRUNC) == os.O_CREATE|os.O_TRUNC:
		create = windows.CREATE_ALWAYS
	case flag&os.O_CREATE == os.O_CREATE:
		create = windows.OPEN_ALWAYS
	case flag&os.O_TRUNC == os.O_TRUNC:
		create = windows.TRUNCATE_EXISTING
	default:
		create = windows.OPEN_EXISTING
	}
	attrs := uint32(windows.FILE_ATTRIBUTE_NORMAL | windows.FILE_FLAG_OPEN_REPARSE_POINT | windows.FILE_FLAG_BACKUP_SEMANTICS)
	if flag&os.O_CREATE != 0 && perm&0o200 == 0 {
		attrs |= windows.FILE_ATTRIBUTE_READONLY
	}
	share := uint32(windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE)
	h, err := windows.CreateFile(p, access, share, nil, create, attrs, 0)
	if err != nil {
		if err == windows.ERROR_FILE_EXISTS {
			err = syscall.ERROR_FILE_EXISTS
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var fi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &fi); err != nil {
		windows.CloseHandle(h)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if fi.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		windows.CloseHandle(h)
		return nil, &os.PathError{Op: "open", Path: path, Err: syscall.ELOOP}
	}
	if fi.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0 && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		windows.CloseHandle(h)
		return nil, &os.PathError{Op: "open", Path: path, Err: syscall.EISDIR}
	}
	return os.NewFile(uintptr(h), path), nil
}

func fileID(os.FileInfo) uint64 { return 0 }

// LockFile takes an exclusive lock on f, waiting for it (LockFileEx).
func LockFile(f *os.File) error {
	ol := new(windows.Overlapped)
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, ol)
}

// UnlockFile releases LockFile's lock.
func UnlockFile(f *os.File) error {
	ol := new(windows.Overlapped)
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, ol)
}
