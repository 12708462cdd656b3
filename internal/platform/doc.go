// Package platform is the one place where acp-guard differs by operating
// system. Everything else in the module is written against the functions
// and types here; nothing outside it imports syscall or golang.org/x/sys
// (internal/archtest checks it). Each file is build-tagged by OS, and each
// behaviour has a contract test that runs on every OS we can run (Linux
// natively, Windows under Wine; macOS is compiled and vetted, its
// behaviours described by the same tests):
//
//   - The agent's process group and its lifetime (Prepare, Attach, Group):
//     the agent runs in a group of its own and dies with acp-guard, also
//     when acp-guard is killed outright. Linux: the parent-death signal
//     (SIGKILL). macOS: a watchdog, acp-guard's own binary started again as
//     a tiny process that waits (kqueue, NOTE_EXIT) for acp-guard to end
//     and then kills the agent's group (watchdog_unix.go). Windows: a job
//     object that kills every process in it when its last handle closes,
//     which the kernel does when acp-guard ends, however it ends.
//   - Orphans (BecomeSubreaper, ReapOrphans): Linux makes acp-guard the
//     subreaper of the agent's descendants and reaps them; elsewhere the
//     process group (macOS) or the job (Windows) is killed at the end.
//   - Stopping (Group.Signal, StopSignals): POSIX forwards SIGTERM, SIGINT
//     and SIGHUP to the group. Windows has no signals: a stop closes the
//     agent's stdin (StopClosesStdin), sends CTRL_BREAK_EVENT to its
//     process group (it is started with CREATE_NEW_PROCESS_GROUP), and
//     SIGKILL terminates the job.
//   - Bytes waiting on an input (Waiting): TIOCINQ (Linux), FIONREAD
//     (macOS), PeekNamedPipe (Windows).
//   - Memory for a long line (MapAnon, Unmap): an anonymous private
//     mapping on POSIX; ErrUnsupported on Windows, where the caller reads
//     the line onto the heap.
//   - A pty for the agent's stderr (OpenPTY): creack/pty where the OS has
//     one; on Windows an error saying it has none.
//   - Files (OpenFile, FileID, LockFile): never through a symbolic link
//     (O_NOFOLLOW on POSIX; on Windows a reparse point is refused, opened
//     with FILE_FLAG_OPEN_REPARSE_POINT and inspected); private permissions
//     (0600/0700 on POSIX; on Windows the files inherit the folder's ACL,
//     which under the user's profile is the user's own — see PrivateNote).
//   - Default folders (StateHome, ConfigHome): the XDG layout on Linux;
//     os.UserCacheDir and os.UserConfigDir elsewhere. XDG variables, when
//     set, are read by the callers and win everywhere.
package platform
