//go:build darwin

package platform

import (
	"os"

	"golang.org/x/sys/unix"
)

// waitParent returns once the process ppid has exited (at once when it
// already has: registering on a gone process fails, and an orphan's
// parent is no longer ppid).
func waitParent(ppid int) {
	kq, err := unix.Kqueue()
	if err != nil {
		return
	}
	defer unix.Close(kq)
	var ev unix.Kevent_t
	unix.SetKevent(&ev, ppid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		return
	}
	if os.Getppid() != ppid {
		return
	}
	out := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, nil, out, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n > 0 {
			return
		}
	}
}
