package natstest

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Cluster is three servers with JetStream clustered over routes on
// 127.0.0.1: what a key-value bucket at R3 runs on. A server stopped and
// started again keeps its ports; it keeps its store directory too unless
// told to lose it. The test's cleanup stops them all.
type Cluster struct {
	t       testing.TB
	Servers []*Server // nil while stopped
	ports   []int     // client ports
	routes  []int     // cluster ports
	dirs    []string
}

// ClusterSize is how many servers StartCluster runs.
const ClusterSize = 3

// StartCluster runs a three-server cluster and waits until JetStream has a
// meta leader.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	for range ClusterSize {
		c.ports = append(c.ports, freePort(t))
		c.routes = append(c.routes, freePort(t))
		c.dirs = append(c.dirs, t.TempDir())
	}
	c.Servers = make([]*Server, ClusterSize)
	for i := range ClusterSize {
		c.start(i)
	}
	c.WaitReady()
	t.Cleanup(func() {
		for i := range c.Servers {
			c.Stop(i)
		}
	})
	return c
}

func (c *Cluster) start(i int) {
	c.t.Helper()
	var routes []*url.URL
	for j, p := range c.routes {
		if j != i {
			routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
		}
	}
	srv, err := server.NewServer(&server.Options{ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: c.ports[i],
		JetStream: true, StoreDir: c.dirs[i], NoLog: true, NoSigs: true,
		Cluster: server.ClusterOpts{Name: "natstest", Host: "127.0.0.1", Port: c.routes[i]}, Routes: routes})
	if err != nil {
		c.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) { // a hang guard only
		srv.Shutdown()
		c.t.Fatal(notReady(c.ports[i], c.routes[i]))
	}
	c.Servers[i] = &Server{srv: srv, Port: c.ports[i], Dir: c.dirs[i]}
}

// URLs is the client URL list of every server, comma-separated.
func (c *Cluster) URLs() string {
	var us []string
	for i := range c.ports {
		us = append(us, c.URL(i))
	}
	return strings.Join(us, ",")
}

// URL is server i's client URL (also while it is stopped).
func (c *Cluster) URL(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.ports[i]) }

// Stop shuts server i down (stopped already: nothing).
func (c *Cluster) Stop(i int) {
	if s := c.Servers[i]; s != nil {
		s.Stop()
		c.Servers[i] = nil
	}
}

// Restart starts the stopped server i again on its ports; keepStore false
// gives it an empty store directory (a server whose disk was lost).
func (c *Cluster) Restart(i int, keepStore bool) {
	c.t.Helper()
	c.Stop(i)
	if !keepStore {
		c.dirs[i] = c.t.TempDir()
	}
	c.start(i)
}

// StreamLeader is the index of the running server that leads stream (in
// the global account), or -1 when none does.
func (c *Cluster) StreamLeader(stream string) int {
	for i, s := range c.Servers {
		if s != nil && s.srv.JetStreamIsStreamLeader("$G", stream) {
			return i
		}
	}
	return -1
}

// WaitReady waits (a hang guard of 30 s, not an oracle) until every
// running server is current with the JetStream meta leader.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ready := true
		for _, s := range c.Servers {
			if s != nil && !s.srv.JetStreamIsCurrent() {
				ready = false
			}
		}
		if ready {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("nats cluster: no JetStream meta leader after 30 s")
}

// WaitStreamLeader waits (hang guard 30 s) until stream has a leader and
// returns its index.
func (c *Cluster) WaitStreamLeader(stream string) int {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if i := c.StreamLeader(stream); i >= 0 {
			return i
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("nats cluster: stream %s has no leader after 30 s", stream)
	return -1
}

// LeadStream makes server i the leader of stream (a JetStream step-down
// request naming it as the preferred leader) and waits (hang guard 30 s)
// until it leads: a test that needs a given server to lead — the one it
// is about to cut off — asks for it instead of hoping.
func (c *Cluster) LeadStream(stream string, i int) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		cur := c.WaitStreamLeader(stream)
		if cur == i {
			return
		}
		nc, err := nats.Connect(c.URL(cur))
		if err != nil {
			c.t.Fatal(err)
		}
		req := fmt.Sprintf(`{"placement":{"preferred":"n%d"}}`, i)
		_, err = nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, []byte(req), 5*time.Second)
		nc.Close()
		if err != nil {
			c.t.Logf("nats cluster: step-down of %s towards n%d: %v (asked again)", stream, i, err)
		}
		for time.Now().Before(deadline) && c.StreamLeader(stream) == cur {
			time.Sleep(20 * time.Millisecond)
		}
	}
	c.t.Fatalf("nats cluster: n%d does not lead %s after 30 s", i, stream)
}
