package natstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// Ports for servers that are stopped and started again on the same port
// come from below every system's ephemeral range (Linux 32768–60999,
// macOS and Windows 49152–65535). A port the kernel handed out
// (127.0.0.1:0) is an ephemeral one: while its server is stopped, a
// client's or a route's reconnect to it can be given that very port as
// its own local port (a TCP self-connect) or any outgoing connection on
// the machine can take it, and the restarted server cannot listen on it
// any more ("nats-server not ready" after the whole hang guard, seen
// beside busy loops in a cold run).
const (
	portLow  = 20000
	portHigh = 32000
)

// freePort is a port in [portLow, portHigh) that nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	for range 1000 {
		p := portLow + rand.IntN(portHigh-portLow)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // taken; another one
		}
		l.Close()
		return p
	}
	t.Fatal("natstest: no free port below the ephemeral range")
	return 0
}

// notReady says why a server did not come up: which of its ports cannot
// be listened on (the common cause), or that the hang guard ran out.
func notReady(ports ...int) string {
	for _, p := range ports {
		if p <= 0 {
			continue // the kernel's choice
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return fmt.Sprintf("nats-server not ready: port %d: %v", p, err)
		}
		l.Close()
	}
	return fmt.Sprintf("nats-server not ready on ports %v within the hang guard", ports)
}
