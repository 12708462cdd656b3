//go:build windows

package platform

import (
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// groupOS: on Windows the agent is in a job object that kills every
// process in it when its last handle closes. acp-guard holds the only
// handle (not inheritable), so the kernel closes it — and kills the agent
// and all it started — when acp-guard ends, also when it is terminated or
// crashes.
//
// Limit: the agent is assigned to the job just after CreateProcess
// returns; a process it started before that moment is not in the job.
type groupOS struct {
	mu  sync.Mutex
	job windows.Handle
}

func prepare(cmd *exec.Cmd) {
	// Its own process group: CTRL_BREAK_EVENT reaches the agent's group
	// only, not acp-guard's.
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

func attach(g *Group, cmd *exec.Cmd) error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("job object limits: %w", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("job object: opening the agent: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("job object: assigning the agent: %w", err)
	}
	g.os.job = job
	return nil
}

func (g *Group) signal(sig Signal) error {
	if sig != SIGKILL {
		return ctrlBreak(g.pid)
	}
	g.os.mu.Lock()
	defer g.os.mu.Unlock()
	if g.os.job == 0 {
		return nil
	}
	return windows.TerminateJobObject(g.os.job, 128+uint32(SIGKILL))
}

func (g *Group) close() {
	g.os.mu.Lock()
	defer g.os.mu.Unlock()
	if g.os.job != 0 {
		_ = windows.TerminateJobObject(g.os.job, 128+uint32(SIGKILL))
		windows.CloseHandle(g.os.job)
		g.os.job = 0
	}
}

func ownGroup(cmd *exec.Cmd) { prepare(cmd) }
