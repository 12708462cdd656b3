// Package safefile is the one way acp-guard opens files it writes: the
// --record transcript, the --log-file and the attempt log in the state
// directory.
//
// The rules, in one place:
//
//   - A file is opened without following a symbolic link in its final
//     component (O_NOFOLLOW; O_EXCL for a new file): a symlink planted where
//     acp-guard writes is refused with a [*SymlinkError] naming the path, and
//     its target is neither truncated, appended to nor chmodded.
//   - A regular file acp-guard creates gets mode 0600; an existing regular
//     file with wider permission bits is narrowed to 0600. A device or FIFO
//     (/dev/null, a named pipe) is written as it is and never chmodded. A
//     directory is refused.
//   - [MkdirPrivate] creates a directory acp-guard owns (the state
//     directory) and any missing parents with mode 0700 exactly, whatever
//     the umask, leaves existing directories alone, and refuses a directory
//     that is a symbolic link: acp-guard does not create files into a
//     directory someone else can redirect.
//   - Paths the operator names (--record, --log-file) get no directories
//     created: a missing parent is an error naming it ([Open] never creates
//     directories).
//
// It imports nothing from acp-guard.
package safefile
