package acptest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// WaitGroupGone waits until no live process is left in process group
// pgid. A zombie (killed, not yet reaped by an init that does not reap)
// counts as gone. Killing is asynchronous, so this polls; the deadline is
// only a guard.
func WaitGroupGone(pgid int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		live := LiveInGroup(pgid)
		if len(live) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still has live processes %v", live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// LiveInGroup lists the pids of non-zombie processes in group pgid.
func LiveInGroup(pgid int) []int {
	if !platform.GroupAlive(pgid) {
		return nil
	}
	var live []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, _, pg, ok := ProcStat(pid)
		if ok && pg == pgid && state != "Z" && state != "X" {
			live = append(live, pid)
		}
	}
	return live
}

// WaitProcessGone waits until pid no longer runs (gone or a zombie).
func WaitProcessGone(pid int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if !platform.Alive(pid) {
			return nil
		}
		if state, _, _, ok := ProcStat(pid); !ok || state == "Z" || state == "X" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ProcStat reads the state, parent and process group of pid from
// /proc/PID/stat: "pid (comm) state ppid pgrp …", where comm may hold
// spaces and parentheses.
func ProcStat(pid int) (state string, ppid, pgrp int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return "", 0, 0, false
	}
	pp, err1 := strconv.Atoi(f[1])
	pg, err2 := strconv.Atoi(f[2])
	return f[0], pp, pg, err1 == nil && err2 == nil
}

// VmHWM reads a live process's peak resident set in bytes.
func VmHWM(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatalf("reading /proc/%d/status: %v", pid, err)
	}
	for _, ln := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(ln, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
