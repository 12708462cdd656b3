//go:build unix

package platform

import (
	"os"
	"syscall"
)

var signalNames = map[Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
}

func exitSignal(ps *os.ProcessState) (Signal, bool) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal(), true
	}
	return 0, false
}

// Raise sends sig to this process. On POSIX the kernel delivers it at once
// (an uncaught stop signal ends the process); it returns only when the
// signal is caught or ignored.
func Raise(sig Signal) error { return syscall.Kill(os.Getpid(), sig) }

// Alive reports whether a process with this pid exists (a zombie counts).
func Alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) != syscall.ESRCH
}

// GroupAlive reports whether any process of the group pgid exists.
func GroupAlive(pgid int) bool {
	return pgid > 0 && syscall.Kill(-pgid, 0) != syscall.ESRCH
}

// KillGroup sends sig to the process group pgid (no error when it is
// gone).
func KillGroup(pgid int, sig Signal) error {
	if pgid <= 0 {
		return nil
	}
	err := syscall.Kill(-pgid, sig)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}

// Kill sends sig to the process pid alone.
func Kill(pid int, sig Signal) error { return syscall.Kill(pid, sig) }
