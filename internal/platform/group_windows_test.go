//go:build windows

package platform

import (
	"os"
	"os/exec"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	kernel32           = windows.NewLazySystemDLL("kernel32.dll")
	procSuspendThread  = kernel32.NewProc("SuspendThread")
	procIsProcessInJob = kernel32.NewProc("IsProcessInJob")
)

// threadsOf returns the ids of pid's threads.
func threadsOf(t *testing.T, pid uint32) []uint32 {
	t.Helper()
	ids, err := threads(pid)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// suspendCount is the thread's suspend count, read by suspending it once
// more and resuming it (SuspendThread returns the count before).
func suspendCount(t *testing.T, tid uint32) uint32 {
	t.Helper()
	th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, tid)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(th)
	r, _, err := procSuspendThread.Call(uintptr(th))
	if uint32(r) == 0xFFFFFFFF {
		t.Fatal(err)
	}
	n := uint32(r)
	if _, err := windows.ResumeThread(th); err != nil {
		t.Fatal(err)
	}
	return n
}

// startSleeper starts this test binary as a sleeper, set up by prepare
// (Prepare or OwnGroup), and kills it at the test's end.
func startSleeper(t *testing.T, prepare func(*exec.Cmd)) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"=sleeper")
	prepare(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// The agent runs no instruction before it is in the job: it is created
// suspended, and Attach assigns it, then resumes it. (Without this, a
// child the agent started in the instant between CreateProcess and the
// assignment would be outside the job and outlive the group.)
func TestAgentRunsOnlyInTheJob(t *testing.T) {
	cmd := startSleeper(t, Prepare)
	pid := uint32(cmd.Process.Pid)
	before := threadsOf(t, pid)
	if len(before) != 1 {
		t.Fatalf("a suspended process has one thread; found %d", len(before))
	}
	if n := suspendCount(t, before[0]); n != 1 {
		t.Fatalf("before Attach the agent's thread is suspended once; count %d", n)
	}
	g, err := Attach(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_INFORMATION, false, pid)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	var in int32
	if r, _, err := procIsProcessInJob.Call(uintptr(h), uintptr(g.os.job), uintptr(unsafe.Pointer(&in))); r == 0 || in == 0 {
		t.Fatalf("after Attach the agent is in the job: %d, %v", in, err)
	}
	if n := suspendCount(t, before[0]); n != 0 {
		t.Fatalf("after Attach the agent runs; suspend count %d", n)
	}
}

// OwnGroup starts a process running: it has no job to wait for.
func TestOwnGroupStartsRunning(t *testing.T) {
	cmd := startSleeper(t, OwnGroup)
	for _, tid := range threadsOf(t, uint32(cmd.Process.Pid)) {
		if n := suspendCount(t, tid); n != 0 {
			t.Fatalf("thread %d suspended (%d)", tid, n)
		}
	}
}
