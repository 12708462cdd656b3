//go:build windows

package platform

import (
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

var signalNames = map[Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGSEGV: "SIGSEGV", syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM",
	syscall.SIGTERM: "SIGTERM",
}

// statusControlCExit is STATUS_CONTROL_C_EXIT, the exit code of a process
// a console control event (Ctrl-C, Ctrl-Break) ended.
const statusControlCExit = 0xC000013A

// exitSignal: a process that a console control event ended is reported
// as ended by SIGINT (what Go's runtime calls that event), so that exit
// codes read as on POSIX (130).
func exitSignal(ps *os.ProcessState) (Signal, bool) {
	if uint32(ps.ExitCode()) == statusControlCExit {
		return SIGINT, true
	}
	return 0, false
}

// Raise ends this process as the signal would have (Windows has no signal
// to send to oneself): exit code 128+sig.
func Raise(sig Signal) error {
	os.Exit(128 + int(sig))
	return nil
}

// Alive reports whether a process with this pid still runs.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == uint32(windows.WAIT_TIMEOUT)
}

// GroupAlive reports whether the leader of the group still runs (Windows
// cannot enumerate a process group; the job object is what ends it).
func GroupAlive(pgid int) bool { return Alive(pgid) }

// KillGroup ends the process pgid (on Windows, without its job: callers
// that own a Group use Group.Signal).
func KillGroup(pgid int, sig Signal) error {
	if pgid <= 0 {
		return nil
	}
	if sig != SIGKILL {
		return ctrlBreak(pgid)
	}
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(pgid))
	if err != nil {
		return nil // gone
	}
	defer windows.CloseHandle(h)
	_ = windows.TerminateProcess(h, 128+uint32(SIGKILL))
	return nil
}

// ctrlBreak sends CTRL_BREAK_EVENT to the process group pgid (a process
// started with CREATE_NEW_PROCESS_GROUP and the same console).
func ctrlBreak(pgid int) error {
	return windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(pgid))
}

// Kill ends the process pid (SIGKILL) or sends it CTRL_BREAK_EVENT (any
// other signal; pid must lead a process group).
func Kill(pid int, sig Signal) error { return KillGroup(pid, sig) }
