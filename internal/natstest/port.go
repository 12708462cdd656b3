package natstest

import (
	"fmt"
	"net"
	"testing"

	"github.com/acp-guard/acp-guard/internal/freeport"
)

// freePort is a port nothing listens on now, below the ephemeral range
// (internal/freeport says why).
func freePort(t testing.TB) int {
	t.Helper()
	p, err := freeport.Pick()
	if err != nil {
		t.Fatal("natstest:", err)
	}
	return p
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
