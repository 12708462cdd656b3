package platform

import "os/exec"

// Group is the agent's process group, started by exec.Cmd after Prepare
// and taken in hand by Attach: what makes it die with acp-guard, and how
// it is stopped. Its methods are safe for concurrent use after Attach.
type Group struct {
	pid int
	os  groupOS
}

// Pid is the process id of the group's leader (the agent).
func (g *Group) Pid() int { return g.pid }

// Prepare sets cmd up to start the agent in a process group of its own,
// before cmd.Start. It replaces cmd.SysProcAttr.
func Prepare(cmd *exec.Cmd) { prepare(cmd) }

// Attach takes the started agent in hand: from its return on, the agent
// and everything it starts die with acp-guard, however acp-guard ends.
// An error leaves the agent running as it is (the caller kills it).
func Attach(cmd *exec.Cmd) (*Group, error) {
	g := &Group{pid: cmd.Process.Pid}
	if err := attach(g, cmd); err != nil {
		return nil, err
	}
	return g, nil
}

// Signal delivers sig to the whole group. POSIX: the signal itself. On
// Windows SIGKILL terminates the job (every process in it) and any other
// signal sends CTRL_BREAK_EVENT to the group. A group that is gone is not
// an error.
func (g *Group) Signal(sig Signal) error { return g.signal(sig) }

// Close kills what is left of the group and releases what Attach holds
// (the watchdog, the job). Call it once the agent has been waited for.
func (g *Group) Close() { g.close() }

// OwnGroup sets cmd up to start in a process group of its own, and no
// more (no tie to acp-guard's lifetime): for test harnesses and tools
// that kill the group themselves with KillGroup. It replaces
// cmd.SysProcAttr.
func OwnGroup(cmd *exec.Cmd) { ownGroup(cmd) }
