package transport

import (
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (Linux).
const prSetChildSubreaper = 36

// becomeSubreaper makes this process the one that inherits the orphans of
// its descendants instead of init, so they can be reaped (acp-guard as
// PID 1 of a container has no init above it).
func becomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return errno
	}
	return nil
}

// reapOrphans reaps every exited child of this process except the agent
// (agentPID), whose exit status belongs to the child's own Wait, each time
// a SIGCHLD arrives, until done is closed. Started by Run when
// Options.Subreaper is set; Run does not wait for it (it only waits on a
// channel and reaps without blocking).
func reapOrphans(agentPID int, done <-chan struct{}, log *slog.Logger) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	for {
		select {
		case <-sigs:
			for _, pid := range exitedChildren(agentPID) {
				var ws syscall.WaitStatus
				if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err == nil && got == pid {
					log.Debug("reaped an orphan of the agent", "pid", pid)
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
			if state, _, ok := procStat(pid); ok && state == "Z" {
				out = append(out, pid)
			}
		}
	}
	return out
}
