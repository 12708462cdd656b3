package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/internal/freeport"
)

// The outage scenario's environment (demoagent.EnvOutageFile and
// demoagent.EnvAttemptsFile; fleet_test.go keeps them equal).
const (
	envOutage   = "ACP_DEMO_OUTAGE_FILE"
	envAttempts = "ACP_DEMO_ATTEMPTS_FILE"
)

// Namespace is the circuit namespace every proxy of a run uses.
const Namespace = "fleet"

// Config is one run.
type Config struct {
	Bin   string // the acp-guard binary (proxy and demo agent)
	N     int    // sessions, one acp-guard process and one agent each
	Store string // nats | file | off
	// Retries and Initial are every session's policy: transient failures
	// retried Retries times, the first after Initial seconds, doubling.
	Retries, Initial int
	// Outage ends the provider's outage when it holds (polled every
	// poll interval from the moment the prompts were sent). Nil: never.
	Outage Cond
	// StoreDown and StoreUp kill the NATS server and start it again (same
	// port, same store directory) when they hold. Nil: never.
	StoreDown, StoreUp Cond
	// NATSURL is the server list of a NATS store run outside the harness
	// (a cluster); empty: the harness runs one server itself.
	NATSURL string
	// Wrap is the command proxy i runs under (e.g. `ip netns exec NS`:
	// its host); nil: none.
	Wrap func(i int) []string
	// Faults are applied, each once, when their condition holds.
	Faults []Fault
	// BeforePrompts, when set, runs once every session is open and just
	// before the prompts go out (a fault that must already hold when the
	// first failures are reported).
	BeforePrompts func() error
	// ReadStore opens the store the circuits are read from at the end
	// (nil: NATSURL or the harness's server, or the file store).
	ReadStore func() (circuit.Store, error)
	// DebugLog runs the proxies at --log-level debug, so that every
	// failed circuit call is seen (Result.FailedAfterHeal).
	DebugLog bool
	// Sample, when set, is called once with every proxy's process id
	// when the outage ends (to measure them while they are parked).
	Sample  func(pids []int)
	Dir     string        // work directory (created)
	Log     io.Writer     // progress lines; nil: none
	Timeout time.Duration // hang guard for the whole run; 0: 10 minutes
}

// Fault is a scripted disturbance of the store. Disturbs marks the
// moment the store may stop answering (proxies logging it unavailable
// from then until Heals plus a grace have not fallen back while it was
// up); Heals the moment it is whole again, from which sharing's resumption
// is measured (Result.Resumed…).
type Fault struct {
	Name            string
	When            Cond
	Do              func() error
	Disturbs, Heals bool
}

// Cond is a condition on the run so far.
type Cond func(*State) bool

// After holds once d passed since the prompts were sent.
func After(d time.Duration) Cond { return func(s *State) bool { return s.Since >= d } }

// State is what a condition sees.
type State struct {
	Since    time.Duration // since the prompts were sent
	Attempts []Attempt     // every prompt the agents received so far
	Logs     []LogEvent    // the proxies' circuit log lines so far
	Answered int           // sessions answered so far
	StoreUp  bool
}

// Run runs cfg and returns what it measured. An error means the harness
// could not run (a process did not start, the hang guard fired); what the
// run measured is judged by the caller from the Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	r := &run{cfg: cfg, outage: filepath.Join(cfg.Dir, "outage"), attempts: filepath.Join(cfg.Dir, "attempts"),
		state: filepath.Join(cfg.Dir, "state")}
	if err := r.setup(); err != nil {
		return nil, err
	}
	defer r.teardown()
	res, err := r.run(ctx)
	if err != nil {
		return nil, err
	}
	return res, nil
}

type run struct {
	cfg                      Config
	outage, attempts, state  string
	policy                   string
	nats                     *natsServer
	proxies                  []*proxy
	sent, outageEnd          time.Time
	storeDown, storeUp       time.Time
	loadStart                [3]float64
	mu                       sync.Mutex
	logs                     []LogEvent
	outageEnded, storeKilled bool
	faultsDone               []bool
}

func (r *run) logf(format string, args ...any) {
	if r.cfg.Log != nil {
		fmt.Fprintf(r.cfg.Log, "fleet: "+format+"\n", args...)
	}
}

func (r *run) setup() error {
	if err := os.MkdirAll(r.cfg.Dir, 0o700); err != nil {
		return err
	}
	r.policy = filepath.Join(r.cfg.Dir, "policy.json")
	doc := fmt.Sprintf(`{"version":1,
"transient":{"retry":{"enabled":true,"max_retries":%d,"initial_interval_seconds":%d},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`,
		r.cfg.Retries, r.cfg.Initial)
	if err := os.WriteFile(r.policy, []byte(doc), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(r.outage, nil, 0o600); err != nil {
		return err
	}
	if r.cfg.Store == "nats" && r.cfg.NATSURL == "" {
		ns, err := startNATS(-1, filepath.Join(r.cfg.Dir, "nats"))
		if err != nil {
			return err
		}
		r.nats = ns
	}
	return nil
}

func (r *run) teardown() {
	for _, p := range r.proxies {
		p.kill()
	}
	if r.nats != nil {
		r.nats.stop()
	}
}

// circuitsFlag is the --circuits value of the run's store.
func (r *run) circuitsFlag() string {
	switch r.cfg.Store {
	case "nats":
		if r.cfg.NATSURL != "" {
			return r.cfg.NATSURL
		}
		return r.nats.url()
	case "off":
		return "off"
	}
	return "file"
}

func (r *run) run(ctx context.Context) (*Result, error) {
	r.loadStart = loadAvg()
	start := time.Now()
	if err := r.startProxies(ctx); err != nil {
		return nil, err
	}
	r.logf("%d proxies (%s) up and their sessions open in %v", r.cfg.N, r.cfg.Store, time.Since(start).Round(time.Millisecond))
	if r.cfg.BeforePrompts != nil {
		if err := r.cfg.BeforePrompts(); err != nil {
			return nil, fmt.Errorf("before the prompts: %w", err)
		}
	}
	r.sent = time.Now()
	for _, p := range r.proxies {
		if err := p.send(request(3, "session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"hi"}]}`, p.session))); err != nil {
			return nil, fmt.Errorf("proxy %d: sending the prompt: %w", p.i, err)
		}
	}
	if err := r.drive(ctx); err != nil {
		return nil, err
	}
	r.logf("all %d sessions answered %v after the prompts", r.cfg.N, time.Since(r.sent).Round(time.Millisecond))
	extra := r.finish()
	return r.result(extra)
}

// startProxies starts every proxy and opens its session, all at once.
func (r *run) startProxies(ctx context.Context) error {
	env := append(os.Environ(), envOutage+"="+r.outage, envAttempts+"="+r.attempts,
		"XDG_CONFIG_HOME="+filepath.Join(r.cfg.Dir, "config"), "XDG_STATE_HOME="+filepath.Join(r.cfg.Dir, "xdg-state"))
	level := "info"
	if r.cfg.DebugLog {
		level = "debug" // the failed circuit calls too (Result.FailedAfterHeal)
	}
	argv := []string{r.cfg.Bin, "--log-level", level, "--notices", "off", "--policy", r.policy,
		"--state-dir", r.state, "--circuits", r.circuitsFlag(), "--circuit-namespace", Namespace,
		"--", r.cfg.Bin, "demo-agent", "--scenario", "outage", "--agent-name", "codex-acp"}
	for i := range r.cfg.N {
		argv := argv
		if r.cfg.Wrap != nil {
			argv = append(r.cfg.Wrap(i), argv...)
		}
		p, err := startProxy(ctx, i, argv, env, r.logEvent)
		if err != nil {
			return err
		}
		r.proxies = append(r.proxies, p)
		if err := p.send(request(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`) +
			request(2, "session/new", `{"cwd":"/tmp","mcpServers":[]}`)); err != nil {
			return fmt.Errorf("proxy %d: %w", i, err)
		}
	}
	for _, p := range r.proxies {
		if _, err := p.wait(ctx, "1"); err != nil {
			return err
		}
		f, err := p.wait(ctx, "2")
		if err != nil {
			return err
		}
		if p.session = sessionID(f); p.session == "" {
			return fmt.Errorf("proxy %d: session/new answered %s", p.i, f.raw)
		}
	}
	return nil
}

// drive polls the conditions until every session is answered.
func (r *run) drive(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		st := r.snapshot()
		if st.Answered == r.cfg.N {
			return nil
		}
		if err := r.step(st); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("hang guard: %d of %d sessions answered after %v (outage ended: %v)",
				st.Answered, r.cfg.N, st.Since.Round(time.Millisecond), r.outageEnded)
		case <-tick.C:
		}
	}
}

// step applies the conditions that hold now.
func (r *run) step(st *State) error {
	if r.nats != nil && !r.storeKilled && r.cfg.StoreDown != nil && r.cfg.StoreDown(st) {
		r.storeKilled, r.storeDown = true, time.Now() // before the shutdown starts: proxies may notice it at once
		r.nats.stop()
		r.logf("NATS killed at +%v", r.storeDown.Sub(r.sent).Round(time.Millisecond))
		st.StoreUp = false
	}
	if r.storeKilled && r.storeUp.IsZero() && r.cfg.StoreUp != nil && r.cfg.StoreUp(st) {
		ns, err := startNATS(r.nats.port, r.nats.dir)
		if err != nil {
			return fmt.Errorf("restarting NATS: %w", err)
		}
		r.nats, r.storeUp = ns, time.Now()
		r.logf("NATS started again at +%v", r.storeUp.Sub(r.sent).Round(time.Millisecond))
	}
	if r.faultsDone == nil {
		r.faultsDone = make([]bool, len(r.cfg.Faults))
	}
	for i, f := range r.cfg.Faults {
		if r.faultsDone[i] || !f.When(st) {
			continue
		}
		r.faultsDone[i] = true
		at := time.Now()
		if f.Disturbs && !r.storeKilled {
			r.storeKilled, r.storeDown = true, at
		}
		if err := f.Do(); err != nil {
			return fmt.Errorf("fault %s: %w", f.Name, err)
		}
		if f.Heals {
			r.storeUp = time.Now()
		}
		r.logf("%s at +%v (%v)", f.Name, at.Sub(r.sent).Round(time.Millisecond), time.Since(at).Round(time.Millisecond))
	}
	if !r.outageEnded && r.cfg.Outage != nil && r.cfg.Outage(st) {
		if r.cfg.Sample != nil {
			var pids []int
			for _, p := range r.proxies {
				pids = append(pids, p.cmd.Process.Pid)
			}
			r.cfg.Sample(pids)
		}
		if err := os.Remove(r.outage); err != nil {
			return err
		}
		r.outageEnded, r.outageEnd = true, time.Now()
		r.logf("outage ended at +%v", r.outageEnd.Sub(r.sent).Round(time.Millisecond))
	}
	return nil
}

func (r *run) snapshot() *State {
	st := &State{Since: time.Since(r.sent), Attempts: readAttempts(r.attempts), StoreUp: !r.storeKilled || !r.storeUp.IsZero()}
	r.mu.Lock()
	st.Logs = append([]LogEvent(nil), r.logs...)
	r.mu.Unlock()
	for _, p := range r.proxies {
		if p.answered("3") > 0 {
			st.Answered++
		}
	}
	return st
}

func (r *run) logEvent(e LogEvent) {
	r.mu.Lock()
	r.logs = append(r.logs, e)
	r.mu.Unlock()
}

// finish closes every proxy's input, reads its output to the end and
// waits for it; it returns how many answers to the prompt came after the
// first.
func (r *run) finish() int {
	for _, p := range r.proxies {
		p.closeInput()
	}
	extra := 0
	for _, p := range r.proxies {
		p.waitExit(30 * time.Second) // hang guard
		extra += max(p.answered("3")-1, 0)
	}
	return extra
}

// finalCircuits reads the run's circuits from its store at the end.
func (r *run) finalCircuits() ([]circuit.Record, error) {
	var st circuit.Store
	var err error
	switch {
	case r.cfg.ReadStore != nil:
		st, err = r.cfg.ReadStore()
	case r.cfg.Store == "nats":
		st, err = circuit.OpenStore(r.circuitsFlag(), circuit.Options{Name: "fleet"})
	case r.cfg.Store == "file":
		st, err = circuit.OpenStore("file", circuit.Options{Dir: r.state})
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return st.List(ctx)
}

// natsServer is a nats-server with JetStream in the harness's process.
type natsServer struct {
	srv  *server.Server
	port int
	dir  string
}

// freePort is a port for the harness's server: it is stopped and started
// again on the same port (StoreDown, StoreUp), so it comes from below the
// ephemeral range (internal/freeport).
func freePort() (int, error) { return freeport.Pick() }

// startNATS starts the harness's server on port, or (port < 0) on a free
// port below the ephemeral range, another one if that was taken
// meanwhile.
func startNATS(port int, dir string) (*natsServer, error) {
	if port >= 0 {
		return startNATSOn(port, dir)
	}
	var err error
	for range 5 {
		var p int
		if p, err = freePort(); err != nil {
			return nil, err
		}
		var ns *natsServer
		if ns, err = startNATSOn(p, dir); err == nil {
			return ns, nil
		}
	}
	return nil, err
}

func startNATSOn(port int, dir string) (*natsServer, error) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true,
		StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		return nil, err
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("nats-server not ready after 30 s")
	}
	return &natsServer{srv: srv, port: srv.Addr().(*net.TCPAddr).Port, dir: dir}, nil
}

func (ns *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", ns.port) }

func (ns *natsServer) stop() {
	ns.srv.Shutdown()
	ns.srv.WaitForShutdown()
}
