//go:build linux

package platform

import (
	"os/exec"
	"syscall"
)

// groupOS: on Linux the kernel does the work (the parent-death signal),
// unless a test asks for the watchdog the other POSIX systems use.
type groupOS struct {
	wd *watchdog
}

// useWatchdog makes Linux use the macOS design (tests of the watchdog).
var useWatchdog = false

func prepare(cmd *exec.Cmd) {
	// Its own process group, so signals and the final kill reach the
	// whole agent; and if acp-guard itself is killed outright (SIGKILL:
	// nothing of ours runs), the kernel kills the agent. SIGKILL, not
	// SIGTERM: with acp-guard gone nobody would escalate, and an agent
	// that ignores TERM would live on unsupervised.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if useWatchdog {
		cmd.SysProcAttr.Pdeathsig = 0
	}
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
