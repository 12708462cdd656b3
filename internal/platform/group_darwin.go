//go:build darwin

package platform

import (
	"os/exec"
	"syscall"
)

// useWatchdog: macOS has no parent-death signal; a watchdog process waits
// for acp-guard to end and kills the group (watchdog_unix.go).
const useWatchdog = true

func prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
