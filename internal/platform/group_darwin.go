//go:build darwin

package platform

import (
	"os/exec"
	"syscall"
)

// groupOS: macOS has no parent-death signal; a watchdog process waits for
// acp-guard to end and kills the group (watchdog_unix.go).
type groupOS struct {
	wd *watchdog
}

func prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func attach(g *Group, _ *exec.Cmd) error {
	wd, err := startWatchdog(g.pid)
	if err != nil {
		return err
	}
	g.os.wd = wd
	return nil
}

func (g *Group) signal(sig Signal) error { return KillGroup(g.pid, sig) }

func (g *Group) close() {
	_ = KillGroup(g.pid, SIGKILL)
	g.os.wd.stop()
}

func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
