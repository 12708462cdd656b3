//go:build linux || darwin

package platform

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// The watchdog makes an agent die with acp-guard where the kernel has no
// parent-death signal (macOS). Attach starts acp-guard's own executable
// again with watchdogEnv set; this package's init sees the variable before
// anything else of the program runs and turns that process into the
// watchdog: it ignores the stop signals, waits for acp-guard to end
// (waitParent: kqueue's NOTE_EXIT on macOS), kills the agent's process
// group with SIGKILL and exits. Because it is the package's init, any
// program built on the library gets the same watchdog, not only
// cmd/acp-guard. The watchdog holds none of the agent's pipes, is in a
// process group of its own (the terminal's Ctrl-C and the signals sent to
// the agent's group do not reach it) and is killed by Group.Close when
// acp-guard ends normally.
//
// Limit: between the agent's start and the watchdog's registration (one
// fork and exec) a SIGKILL of acp-guard leaves the agent running; the
// watchdog then finds its parent already gone and kills the group at
// once, so the window is only lost if acp-guard dies before the watchdog
// was even started.
const watchdogEnv = "ACP_GUARD_PLATFORM_WATCHDOG"

func init() {
	if v, ok := os.LookupEnv(watchdogEnv); ok {
		os.Exit(runWatchdog(v))
	}
}

type watchdog struct {
	cmd *exec.Cmd
}

func startWatchdog(pgid int) (*watchdog, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Args = []string{"acp-guard-watchdog"}
	cmd.Env = []string{watchdogEnv + "=" + strconv.Itoa(os.Getpid()) + ":" + strconv.Itoa(pgid)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	return &watchdog{cmd: cmd}, nil
}

// stop ends the watchdog and reaps it (a nil watchdog does nothing).
func (w *watchdog) stop() {
	if w == nil {
		return
	}
	_ = w.cmd.Process.Kill()
	_ = w.cmd.Wait()
}

// runWatchdog is the watchdog process: "ppid:pgid".
func runWatchdog(v string) int {
	a, b, _ := strings.Cut(v, ":")
	ppid, err1 := strconv.Atoi(a)
	pgid, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || ppid <= 1 || pgid <= 1 {
		fmt.Fprintf(os.Stderr, "acp-guard watchdog: bad %s=%q\n", watchdogEnv, v)
		return 2
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	waitParent(ppid)
	_ = KillGroup(pgid, SIGKILL)
	return 0
}
