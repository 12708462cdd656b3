//go:build linux

package platform

import (
	"os/exec"
	"syscall"
)

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
