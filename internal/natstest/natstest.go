// Package natstest runs a real nats-server with JetStream
// (github.com/nats-io/nats-server/v2) inside a test process, on 127.0.0.1:
// what every test of a store shared across machines talks to. Only tests
// import it.
package natstest

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is one running server; the test's cleanup shuts it down.
type Server struct {
	srv  *server.Server
	Port int    // the port it listens on
	Dir  string // its JetStream store directory
}

// Start runs a server on a free port (below the ephemeral range, so that
// it can be restarted on it: port.go) with a fresh store directory.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartAt(t, freePort(t), t.TempDir())
}

// StartAt runs a server on port (-1: a free one) storing in dir: with a
// stopped server's port and directory it is that server restarted; with
// another directory, a restart that lost its store.
func StartAt(t testing.TB, port int, dir string) *Server {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true,
		StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) { // a hang guard only
		srv.Shutdown()
		t.Fatal(notReady(port))
	}
	s := &Server{srv: srv, Port: srv.Addr().(*net.TCPAddr).Port, Dir: dir}
	t.Cleanup(s.Stop)
	return s
}

// URL is the server's client URL.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.Port) }

// Clients is the number of client connections the server has now.
func (s *Server) Clients() int { return s.srv.NumClients() }

// Stop shuts the server down and waits for it (again: nothing).
func (s *Server) Stop() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
}

// DeadURL is the URL of a port nobody listens on.
func DeadURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + l.Addr().String()
	l.Close()
	return url
}
