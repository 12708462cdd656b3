package transport

import (
	"log/slog"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// becomeSubreaper makes this process the one that inherits the orphans of
// its descendants instead of init, so they can be reaped (acp-guard as
// PID 1 of a container has no init above it). Linux only: elsewhere the
// orphans stay in the agent's process group or job, which is killed at
// the end (platform.BecomeSubreaper).
func becomeSubreaper() error { return platform.BecomeSubreaper() }

// reapOrphans reaps every exited child of this process except the agent
// (agentPID), whose exit status belongs to the child's own Wait, each time
// a SIGCHLD arrives, until done is closed. Started by Run when
// Options.Subreaper is set; Run does not wait for it (it only waits on a
// channel and reaps without blocking).
func reapOrphans(agentPID int, done <-chan struct{}, log *slog.Logger) {
	platform.ReapOrphans(agentPID, done, func(pid int) { log.Debug("reaped an orphan of the agent", "pid", pid) })
}
