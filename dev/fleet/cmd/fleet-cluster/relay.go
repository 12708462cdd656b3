//go:build linux

package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel this runs on may lack tc's netem (and every classifier), so
// the slow fault delays the servers' routes in user space: in that row
// each server's route port is reached through a relay of the harness (in
// the control namespace) that holds every chunk it forwards for the
// current delay, in both directions. Clients still reach their servers
// directly, so a connection answers a ping at once while a store call
// that needs the stream's leader or its quorum crosses the relay.

// relayPort is relay k's port in the control namespace (server k+1's
// route address in the slow row).
func relayPort(k int) int { return 6300 + k + 1 }

// relay forwards every connection it accepts to target, each chunk held
// for delay (read when the chunk arrives). Its goroutines end when the
// listener is closed (serve) or either side of a pair closes (pipe).
type relay struct {
	ln     net.Listener
	target string
	dial   func(network, address string) (net.Conn, error)
	delay  atomic.Int64 // nanoseconds
}

// listenIn listens on address from inside namespace ns (the socket stays
// there), as nsDialer dials.
func listenIn(ns, address string) (net.Listener, error) {
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer orig.Close()
	f, err := os.Open(filepath.Join("/var/run/netns", ns))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer f.Close()
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("setns %s: %w", ns, err)
	}
	ln, err := net.Listen("tcp", address)
	if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
		runtime.UnlockOSThread()
	}
	return ln, err
}

// startRelay relays ctl's relayPort(k) to server k's route port.
func startRelay(k int) (*relay, error) {
	ln, err := listenIn(nsName("ctl"), fmt.Sprintf("%s:%d", hostAddr(ctlAddr), relayPort(k)))
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, target: fmt.Sprintf("%s:%d", hostAddr(serverHost(k)), clusterPort), dial: nsDialer{nsName("ctl")}.Dial}
	go r.serve()
	return r, nil
}

func (r *relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		go r.pipe(c)
	}
}

func (r *relay) pipe(in net.Conn) {
	out, err := r.dial("tcp", r.target)
	if err != nil {
		in.Close()
		return
	}
	go r.copy(out, in)
	go r.copy(in, out)
}

// copy forwards src to dst, each chunk delay after it arrived; either
// side failing closes both (the other copy then ends too).
func (r *relay) copy(dst, src net.Conn) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	ch := make(chan chunk, 4096)
	go func() { // the reader; ends with src, and closes ch for the writer below
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{buf[:n], time.Now().Add(time.Duration(r.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

func (r *relay) close() { r.ln.Close() }
