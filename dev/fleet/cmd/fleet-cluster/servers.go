//go:build linux

package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Ports every server listens on inside its host.
const (
	clientPort  = 4222
	clusterPort = 6222
)

// serveNATS is the `nats-server` subcommand: one JetStream server of the
// cluster, run in its host's namespace until SIGTERM or SIGKILL.
func serveNATS(args []string) int {
	fs := flag.NewFlagSet("nats-server", flag.ContinueOnError)
	name := fs.String("name", "", "server name")
	addr := fs.String("addr", "", "address to listen on")
	routes := fs.String("routes", "", "comma-separated route URLs of the other servers")
	dir := fs.String("dir", "", "JetStream store directory")
	advertise := fs.String("advertise", "", "route address told to the other servers (default: the listen address)")
	pingsOut := fs.Int("max-pings-out", 3, "route pings without a pong before the route is cut")
	if fs.Parse(args) != nil {
		return 2
	}
	srv, err := server.NewServer(&server.Options{ServerName: *name, Host: *addr, Port: clientPort,
		JetStream: true, StoreDir: *dir, NoSigs: true, NoLog: true,
		// Routes ping every second, three missed pongs cut them: a route
		// stalled by a partition is dropped and dialled again, so the
		// cluster is whole within seconds of healing instead of after
		// TCP's backed-off retransmission (the default is 2 min).
		Cluster: server.ClusterOpts{Name: prefix, Host: *addr, Port: clusterPort,
			PingInterval: time.Second, MaxPingsOut: *pingsOut, Advertise: *advertise},
		Routes: server.RoutesFromStr(*routes)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "nats-server:", err)
		return 1
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		fmt.Fprintln(os.Stderr, "nats-server: not ready after 30 s")
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	srv.Shutdown()
	srv.WaitForShutdown()
	return 0
}

// natsProc is one server of the cluster: a child process in host i.
type natsProc struct {
	i     int
	dir   string
	cmd   *exec.Cmd
	ticks int64 // CPU ticks of its earlier processes (before a restart)
}

type cluster struct {
	self    string // this program, re-executed as the server
	work    string
	servers []*natsProc
	// relays, when set (the slow row), carry every route: server k is
	// reached by its peers at relays[k] and advertises that address.
	relays []*relay
}

// routeAddr is where the other servers reach server k's route port.
func (c *cluster) routeAddr(k int) string {
	if c.relays != nil {
		return fmt.Sprintf("%s:%d", hostAddr(ctlAddr), relayPort(k))
	}
	return fmt.Sprintf("%s:%d", hostAddr(serverHost(k)), clusterPort)
}

// delayRoutes sets every relay's delay.
func (c *cluster) delayRoutes(d time.Duration) {
	for _, r := range c.relays {
		r.delay.Store(int64(d))
	}
}

// serverHost is the host of server k (0-based): hosts 1, 2, 3.
func serverHost(k int) int { return k + 1 }

func (c *cluster) urls() string {
	var us []string
	for k := range c.servers {
		us = append(us, fmt.Sprintf("nats://%s:%d", hostAddr(serverHost(k)), clientPort))
	}
	return strings.Join(us, ",")
}

func startCluster(self, work string, n int, relayed bool) (*cluster, error) {
	c := &cluster{self: self, work: work}
	for k := 0; relayed && k < n; k++ {
		r, err := startRelay(k)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.relays = append(c.relays, r)
	}
	for k := range n {
		c.servers = append(c.servers, &natsProc{i: k, dir: filepath.Join(work, fmt.Sprintf("nats-%d", k))})
	}
	for k := range n {
		if err := c.start(k); err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

func (c *cluster) start(k int) error {
	s := c.servers[k]
	var routes []string
	for j := range c.servers {
		if j != k {
			routes = append(routes, "nats://"+c.routeAddr(j))
		}
	}
	logf, err := os.OpenFile(filepath.Join(c.work, fmt.Sprintf("nats-%d.log", k)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	// The servers run at a higher CPU priority than the sessions: on
	// this machine every simulated host shares the same cores, where a
	// real cluster's servers have their own; at hundreds of sessions a
	// starved server misses its route heartbeats and the stream loses its
	// leader with no fault at all. (nice before exec: every thread of the
	// server inherits it.)
	cmd := exec.Command("nice", "-n", strconv.Itoa(serverNice), "ip", "netns", "exec", hostNS(serverHost(k)), c.self, "nats-server",
		"-name", "s"+strconv.Itoa(k+1), "-addr", hostAddr(serverHost(k)), "-routes", strings.Join(routes, ","), "-dir", s.dir)
	if c.relays != nil {
		// A route pinged every second whose pongs come a delayed round
		// trip later must not be cut meanwhile (the cluster is slow, not
		// broken).
		cmd.Args = append(cmd.Args, "-advertise", c.routeAddr(k), "-max-pings-out", "20")
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // the harness gone: the server too
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	return nil
}

// serverNice is the servers' nice value (the harness runs as root).
const serverNice = -10

// kill ends server k at once (SIGKILL: no clean shutdown) and reaps it.
func (c *cluster) kill(k int) {
	s := c.servers[k]
	if s.cmd == nil {
		return
	}
	s.ticks += cpuTicks(s.cmd.Process.Pid)
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// restart starts the killed server k again; keep false wipes its store
// first (a server whose disk was lost).
func (c *cluster) restart(k int, keep bool) error {
	c.kill(k)
	if !keep {
		if err := os.RemoveAll(c.servers[k].dir); err != nil {
			return err
		}
	}
	return c.start(k)
}

func (c *cluster) stop() {
	for k := range c.servers {
		c.kill(k)
	}
	for _, r := range c.relays {
		r.close()
	}
}

// cpuSeconds is the CPU time every server process used so far.
func (c *cluster) cpuSeconds() float64 {
	var t int64
	for _, s := range c.servers {
		t += s.ticks
		if s.cmd != nil {
			t += cpuTicks(s.cmd.Process.Pid)
		}
	}
	return float64(t) / 100 // USER_HZ
}

// cpuTicks is a process's user + system time in clock ticks.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// rssKiB is a process's resident memory and that of its descendants.
func rssKiB(pid int) int64 {
	var total int64
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				total, _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
	}
	kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, k := range strings.Fields(string(kids)) {
		if kp, err := strconv.Atoi(k); err == nil {
			total += rssKiB(kp)
		}
	}
	return total
}
