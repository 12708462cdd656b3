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
// The agent starts suspended (CREATE_SUSPENDED) and runs only once it is
// in the job, so nothing it starts can escape it: on a busy machine the
// agent could otherwise start a child between CreateProcess and the
// assignment, and that child would outlive the group.
type groupOS struct {
	mu  sync.Mutex
	job windows.Handle
}

func prepare(cmd *exec.Cmd) {
	// Its own process group (CTRL_BREAK_EVENT reaches the agent's group
	// only, not acp-guard's), suspended until attach has put it in the job.
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED}
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
	if err := resume(uint32(cmd.Process.Pid)); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("job object: resuming the agent: %w", err)
	}
	g.os.job = job
	return nil
}

// resume starts the threads of a process created suspended (its one
// thread, as CreateProcess leaves it; Go's StartProcess closes the handle
// to it, so it is found again by its owner's pid).
func resume(pid uint32) error {
	ids, err := threads(pid)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return fmt.Errorf("no thread of process %d", pid)
	}
	for _, id := range ids {
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, id)
		if err != nil {
			return err
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return err
		}
	}
	return nil
}

// threads returns the ids of pid's threads (a Toolhelp snapshot).
func threads(pid uint32) ([]uint32, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(snap)
	var ids []uint32
	e := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	for err = windows.Thread32First(snap, &e); err == nil; err = windows.Thread32Next(snap, &e) {
		if e.OwnerProcessID == pid {
			ids = append(ids, e.ThreadID)
		}
	}
	return ids, nil
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

// ownGroup: a process group of its own, started running (no job).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}
