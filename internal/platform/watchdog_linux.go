//go:build linux

package platform

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitParent returns once the process ppid has exited: the Linux stand-in
// for macOS's kqueue wait, so that the watchdog design is tested here too
// (useWatchdog). The parent-death signal is asked for first, then the
// parent checked, so an exit between the two is not missed.
func waitParent(ppid int) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGUSR1), 0, 0, 0); err != nil {
		return
	}
	if os.Getppid() != ppid {
		return
	}
	<-sigs
}
