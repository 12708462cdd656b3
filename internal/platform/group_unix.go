//go:build linux || darwin

package platform

import (
	"os/exec"
	"syscall"
)

// groupOS: the agent's process group, and the watchdog that kills it when
// acp-guard ends without closing it (macOS always; Linux only when a test
// asks for it: the kernel's parent-death signal does the work there).
type groupOS struct {
	wd *watchdog
}

func attach(g *Group, _ *exec.Cmd) error {
	if !useWatchdog {
		return nil
	}
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
