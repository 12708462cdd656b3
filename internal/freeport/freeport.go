// Package freeport picks TCP ports for servers that are stopped and
// started again on the same port (the NATS servers of tests and of the
// fleet harnesses).
//
// The ports come from below every system's ephemeral range (Linux
// 32768–60999, macOS and Windows 49152–65535). A port the kernel handed
// out (127.0.0.1:0) is an ephemeral one: while its server is stopped, a
// client's or a route's reconnect to it can be given that very port as
// its own local port (a TCP self-connect), or any outgoing connection on
// the machine can take it, and the restarted server cannot listen on it
// any more ("nats-server not ready" after the whole hang guard, seen
// beside busy loops in a cold run).
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
)

// Low and High bound the range: [Low, High).
const (
	Low  = 20000
	High = 32000
)

// Pick returns a port in [Low, High) that nothing on 127.0.0.1 listens
// on now (another process may still take it before the caller does: a
// caller that fails to listen picks again).
func Pick() (int, error) {
	for range 1000 {
		p := Low + rand.IntN(High-Low)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // taken; another one
		}
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port in %d–%d", Low, High)
}
