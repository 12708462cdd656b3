package platform

import "os"

// OpenFile opens path like os.OpenFile, but never through a symbolic
// link (or, on Windows, any reparse point) as its last element: that
// fails with an error matching ELOOP. On POSIX O_NOFOLLOW|O_CLOEXEC are
// added; on Windows the file is opened with FILE_FLAG_OPEN_REPARSE_POINT
// and refused when it is one.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	return openFile(path, flag, perm)
}

// NoFollowFlags are the open flags that refuse a symbolic link, for a
// library that takes flags (POSIX: O_NOFOLLOW|O_CLOEXEC; 0 on Windows,
// where only OpenFile refuses links).
const NoFollowFlags = noFollowFlags

// FileID is the file's identity within its file system (the inode on
// POSIX), or 0 when fi does not carry one (Windows).
func FileID(fi os.FileInfo) uint64 { return fileID(fi) }

// PrivateNote says how private files are kept private on this OS, for
// documentation and error messages.
const PrivateNote = privateNote
