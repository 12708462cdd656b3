//go:build linux

package platform

import (
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes this process the one that inherits the orphans of
// its descendants instead of init, so they can be reaped (acp-guard as
// PID 1 of a container has no init above it). Linux only; elsewhere it
// returns errors.ErrUnsupported.
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// ReapOrphans reaps every exited child of this process except skip (the
// agent, whose exit status belongs to its own Wait) each time a SIGCHLD
// arrives, until done is closed, calling reaped for each. It only waits on
// a channel and reaps without blocking.
func ReapOrphans(skip int, done <-chan struct{}, reaped func(pid int)) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	for {
		select {
		case <-sigs:
			for _, pid := range exitedChildren(skip) {
				var ws syscall.WaitStatus
				if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err == nil && got == pid && reaped != nil {
					reaped(pid)
				}
			}
		case <-done:
			return
		}
	}
}

// exitedChildren lists this process's children that have exited (zombies),
// except skip. It reads /proc/self/task/*/children.
func exitedChildren(skip int) []int {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil || pid == skip {
				continue
			}
			if state, _, ok := ProcStat(pid); ok && state == "Z" {
				out = append(out, pid)
			}
		}
	}
	return out
}

// Exited reports whether pid has exited (a zombie waiting to be reaped,
// or gone).
func Exited(pid int) bool {
	state, _, ok := ProcStat(pid)
	return !ok || state == "Z" || state == "X"
}

// ProcStat reads the state and parent of pid from /proc (Linux only).
func ProcStat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return "", 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return f[0], pp, err == nil
}
