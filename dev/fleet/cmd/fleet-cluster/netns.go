//go:build linux

package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Every resource the program makes is named with this prefix: network
// namespaces (prefix-br, prefix-ctl, prefix-hN) and temporary
// directories; whatever a crashed run left is deleted at the start.
const prefix = "acpgc"

// subnet is the private range used inside the namespaces only: host N is
// .N, the harness's control namespace .250.
const subnet = "10.231.0."

const ctlAddr = 250

func nsName(what string) string { return prefix + "-" + what }

func hostNS(i int) string { return nsName(fmt.Sprintf("h%d", i)) }

func hostAddr(i int) string { return subnet + strconv.Itoa(i) }

// sh runs one ip(8) command.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// cleanup kills every process inside a namespace of ours, deletes the
// namespaces (their veths and the bridge go with them) and our temporary
// directories. Safe to run at any time; what is absent is skipped.
func cleanup() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], prefix+"-") {
			continue
		}
		pids, _ := exec.Command("ip", "netns", "pids", f[0]).Output()
		for _, p := range strings.Fields(string(pids)) {
			if pid, err := strconv.Atoi(p); err == nil && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = ip("netns", "del", f[0])
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"-run-*"))
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

// topology makes the bridge namespace, the control namespace and hosts
// 1..n, each joined to the bridge by a veth pair (bridge side vN, host
// side eth0).
func topology(hosts int) error {
	br := nsName("br")
	for _, cmd := range [][]string{
		{"netns", "add", br},
		{"-n", br, "link", "add", "br0", "type", "bridge"},
		{"-n", br, "link", "set", "br0", "up"},
	} {
		if err := ip(cmd...); err != nil {
			return err
		}
	}
	join := func(ns, port, addr string) error {
		for _, cmd := range [][]string{
			{"netns", "add", ns},
			{"-n", br, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns},
			{"-n", br, "link", "set", port, "master", "br0", "up"},
			{"-n", ns, "addr", "add", addr + "/24", "dev", "eth0"},
			{"-n", ns, "link", "set", "eth0", "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		} {
			if err := ip(cmd...); err != nil {
				return err
			}
		}
		return nil
	}
	if err := join(nsName("ctl"), "vctl", hostAddr(ctlAddr)); err != nil {
		return err
	}
	for i := 1; i <= hosts; i++ {
		if err := join(hostNS(i), fmt.Sprintf("v%d", i), hostAddr(i)); err != nil {
			return err
		}
	}
	return nil
}

// partition pulls host i's cable (the bridge side of its veth goes
// down: packets vanish, connections stall) or plugs it back.
func partition(i int, cut bool) error {
	state := "up"
	if cut {
		state = "down"
	}
	return ip("-n", nsName("br"), "link", "set", fmt.Sprintf("v%d", i), state)
}

// nsDialer dials from inside a network namespace: the socket is made on
// an OS thread moved into it and back (the socket stays in the namespace
// whoever uses it afterwards). The thread is restored rather than thrown
// away: a thread that ends would fire the PR_SET_PDEATHSIG of every child
// it happened to start.
type nsDialer struct{ ns string }

func (d nsDialer) Dial(network, address string) (net.Conn, error) {
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer orig.Close()
	f, err := os.Open(filepath.Join("/var/run/netns", d.ns))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer f.Close()
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("setns %s: %w", d.ns, err)
	}
	c, err := (&net.Dialer{Timeout: 2 * time.Second}).Dial(network, address)
	if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
		runtime.UnlockOSThread() // back in its namespace: the thread may serve others
	} // else the thread stays locked to this goroutine and ends with it, never serving another in the wrong namespace
	return c, err
}
