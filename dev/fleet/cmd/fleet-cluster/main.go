//go:build linux

// Command fleet-cluster runs the fleet of package fleet on a three-server
// NATS JetStream cluster across simulated hosts (network namespaces on a
// private bridge, made and removed by the program), with scripted faults:
// the circuits bucket's stream leader killed mid-outage, one host
// partitioned and rejoined, one server restarted with its store and
// another without, a burst of ten times the usual failure writes, and the
// servers' routes slowed (through a delaying relay) so that the store answers later than
// the call timeout while every connection is up. It
// prints one Markdown table, a row per fault (docs/CIRCUITS.md), and exits
// 1 when a row misses the bounds. It needs root (ip netns); without
// it, it says so and exits 0.
//
// Every resource is named acpgc-…: namespaces acpgc-br (the bridge),
// acpgc-ctl (the harness's own address), acpgc-h1… (hosts; servers run in
// h1–h3), temporary directories acpgc-run-*. Whatever an earlier run left
// is removed at the start, and everything on every exit path (a signal
// included); servers and proxies die with the harness (PR_SET_PDEATHSIG).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/dev/fleet"
	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// lockWait bounds how long a run waits for another to end.
const lockWait = 20 * time.Minute

func main() {
	if len(os.Args) > 1 && os.Args[1] == "nats-server" {
		os.Exit(serveNATS(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	bin     string
	n       int
	hosts   int
	faults  []string
	outage  time.Duration
	timeout time.Duration
	// timingBounds: a row whose sharing resumed later than 5 s after
	// healing fails the exit status too (false: it is printed only).
	timingBounds bool
}

var allFaults = []string{"none", "leader", "partition", "restarts", "burst", "slow"}

// slowDelay and slowFor are the slow fault's: every route between the
// servers delays its traffic by slowDelay each way (relay.go; a read
// through a follower or a write's quorum then takes two or more of them,
// beyond the call timeout's 2 s floor) from just before the prompts until
// slowFor after them. A write through a follower takes four (6 s), inside
// the four timeouts (8 s) a slow store is waited for: the row tests that a
// slow store is waited for, not where the wait gives up. At 2.5 s such a
// write took 10 s, past the wait, and one proxy in 50 fell back in a
// cold CI run.
const (
	slowDelay = 1500 * time.Millisecond
	slowFor   = 6 * time.Second
)

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fleet-cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.n, "n", 50, "sessions (acp-guard processes), spread over the hosts")
	fs.IntVar(&o.hosts, "hosts", 5, "simulated hosts (at least 3: servers run on hosts 1-3)")
	faults := fs.String("faults", strings.Join(allFaults, ","), "faults to run, one row each")
	fs.StringVar(&o.bin, "bin", "", "acp-guard binary (default: build ./cmd/acp-guard)")
	fs.DurationVar(&o.outage, "outage", 10*time.Second, "the provider's outage, from the prompts")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "hang guard of each row")
	fs.BoolVar(&o.timingBounds, "timing-bounds", true, "fail the exit status when sharing resumed later than 5 s after healing (false: print only; the counts still decide)")
	if fs.Parse(args) != nil {
		return 2
	}
	o.faults = strings.Split(*faults, ",")
	if o.hosts < 3 || o.n < 1 {
		fmt.Fprintln(stderr, "fleet-cluster: want -hosts >= 3 and -n >= 1")
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "fleet-cluster: skipped: needs root (it makes network namespaces with ip netns)")
		return 0
	}
	if _, err := exec.LookPath("ip"); err != nil {
		fmt.Fprintln(stderr, "fleet-cluster: skipped: ip(8) not found (apt-get install iproute2)")
		return 0
	}
	// One run at a time: the namespaces and addresses are fixed. A second
	// run waits for the first (a lock dies with its process, so none is
	// left stale), up to lockWait.
	lock := flock.New(filepath.Join(os.TempDir(), prefix+".lock"))
	ok, err := lock.TryLock()
	if err == nil && !ok {
		fmt.Fprintln(stderr, "fleet-cluster: another run holds", lock.Path()+"; waiting for it (at most", lockWait, ")")
		lctx, cancel := context.WithTimeout(context.Background(), lockWait)
		ok, err = lock.TryLockContext(lctx, 500*time.Millisecond)
		cancel()
	}
	if err != nil || !ok {
		fmt.Fprintln(stderr, "fleet-cluster: another run holds", lock.Path(), err)
		return 1
	}
	defer lock.Unlock()
	cleanup() // what a crashed run left
	defer cleanup()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	work, err := os.MkdirTemp("", prefix+"-run-")
	if err != nil {
		fmt.Fprintln(stderr, "fleet-cluster:", err)
		return 1
	}
	if err := os.Chmod(work, 0o755); err != nil { // the proxies run as root too; the servers read their dirs
		fmt.Fprintln(stderr, "fleet-cluster:", err)
		return 1
	}
	if o.bin == "" {
		o.bin = filepath.Join(work, "acp-guard")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", o.bin, "./cmd/acp-guard")
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(stderr, "fleet-cluster: building acp-guard:", err)
			return 1
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "fleet-cluster:", err)
		return 1
	}
	if err := topology(o.hosts); err != nil {
		fmt.Fprintln(stderr, "fleet-cluster:", err)
		return 1
	}
	fmt.Fprintf(stdout, "| fault | N / hosts | answers (ok, each once) | attempts during the outage (own + retries) | retries per cooldown window (max; each) | probes | store unavailable (proxies) | sharing resumed after healing | memory per session (proxy + agent) | NATS CPU (3 servers) | load avg (1 min, start → end) | verdict |\n")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	var missed []string // "fault: why", repeated last so that a log's tail names them
	for i, f := range o.faults {
		row, ok, err := runFault(ctx, o, self, filepath.Join(work, fmt.Sprintf("row-%d", i)), f, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "fleet-cluster: %s: %v\n", f, err)
			missed = append(missed, fmt.Sprintf("%s: %v", f, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		fmt.Fprintln(stdout, row)
		if !ok {
			missed = append(missed, f+": "+rowVerdict(row))
		}
	}
	if len(missed) > 0 {
		fmt.Fprintf(stderr, "fleet-cluster: %d of %d rows missed their bounds:\n", len(missed), len(o.faults))
		for _, m := range missed {
			fmt.Fprintln(stderr, "  "+m)
		}
		return 1
	}
	return 0
}

// rowVerdict is a row's last cell (its verdict).
func rowVerdict(row string) string {
	cells := strings.Split(strings.TrimSuffix(strings.TrimSpace(row), "|"), "|")
	return strings.TrimSpace(cells[len(cells)-1])
}

// ctlOptions connect from the control namespace.
func ctlOptions() circuit.Options {
	return circuit.Options{Name: "fleet-cluster",
		Extra: []nats.Option{nats.SetCustomDialer(nsDialer{nsName("ctl")}), nats.ReconnectWait(200 * time.Millisecond)}}
}

// ctlStore opens the circuits bucket from the control namespace, on a
// connection of its own (closed with it).
func ctlStore(urls string) (circuit.Store, error) { return circuit.OpenStore(urls, ctlOptions()) }

const stream = "KV_" + circuit.DefaultBucket

// streamInfo asks the cluster for stream name's info within timeout.
// Every server receives the request; one that lost track of the cluster's
// leader answers at once "temporarily unavailable" while the stream's
// leader answers with the info: the first answer without an error is
// taken (the client library would take the first answer of any kind,
// and the harness would see the cluster broken while it is whole).
func streamInfo(nc *nats.Conn, name string, timeout time.Duration) (*jetstream.StreamInfo, error) {
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest("$JS.API.STREAM.INFO."+name, inbox, nil); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	var last error = nats.ErrTimeout
	for {
		m, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			return nil, last
		}
		var r struct {
			Error *jetstream.APIError `json:"error"`
			jetstream.StreamInfo
		}
		if err := json.Unmarshal(m.Data, &r); err != nil {
			last = err
			continue
		}
		if r.Error != nil {
			last = r.Error
			continue
		}
		return &r.StreamInfo, nil
	}
}

// leader is the name of the bucket stream's leader ("" when none).
func leader(nc *nats.Conn) string {
	si, err := streamInfo(nc, stream, time.Second)
	if err != nil || si.Cluster == nil {
		return ""
	}
	return si.Cluster.Leader
}

// whole reports whether the bucket's stream has a leader and n current
// replicas in all (the leader included).
func whole(nc *nats.Conn, n int) bool {
	si, err := streamInfo(nc, stream, time.Second)
	if err != nil {
		return false
	}
	ci := si.Cluster
	if ci == nil || ci.Leader == "" {
		return false
	}
	current := 1
	for _, r := range ci.Replicas {
		if r.Current && !r.Offline {
			current++
		}
	}
	return current >= n
}

// serves reports whether the store answers a read (of a key nobody
// writes: "none" is an answer) within a second.
func serves(st circuit.Store) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _, err := st.Get(ctx, "fleet-cluster.serves")
	return err == nil
}

// consumers is how many consumers (watchers) a stream has now (-1: unknown).
func consumers(nc *nats.Conn, name string) int {
	si, err := streamInfo(nc, name, 2*time.Second)
	if err != nil {
		return -1
	}
	return si.State.Consumers
}

func runFault(ctx context.Context, o options, self, dir, fault string, stderr io.Writer) (string, bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	c, err := startCluster(self, dir, 3, fault == "slow")
	if err != nil {
		return "", false, err
	}
	defer c.stop()
	st, err := ctlStore(c.urls())
	if err != nil {
		return "", false, err
	}
	defer st.Close()
	ctl := ctlOptions()
	nc, err := kvstore.DialNATS(c.urls(), ctl.Name, ctl.Extra...)
	if err != nil {
		return "", false, err
	}
	defer nc.Close()
	// The bucket, at R3 (the store creates it so on a cluster), before
	// any session: a hang guard of 60 s while the cluster forms.
	deadline := time.Now().Add(60 * time.Second)
	for {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := st.List(lctx)
		cancel()
		if err == nil && leader(nc) != "" {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", false, fmt.Errorf("cluster not ready: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The cluster's state, polled beside the run (a condition must not
	// block the harness's loop while the cluster cannot answer).
	var curLeader atomic.Value
	var isWhole atomic.Bool   // whole and serving: see below
	var isServing atomic.Bool // a read answered
	var polls atomic.Int64    // readings of the cluster's state so far
	curLeader.Store("")
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	t0 := time.Now()
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		last, lastWhole, lastServes := "", false, false
		for {
			// Whole: three current replicas, one the leader, by the
			// stream's info — and serving: a read from the control
			// namespace answered. A cluster reports itself whole
			// seconds before its reads are answered (a rejoined
			// leader's meta layer still electing: every get answered
			// "temporarily unavailable"), and until then no proxy can
			// share through it: healing is when both hold.
			l, w, sv := leader(nc), whole(nc, 3), serves(st)
			curLeader.Store(l)
			isWhole.Store(w && sv)
			isServing.Store(sv)
			polls.Add(1)
			if l != last || w != lastWhole || sv != lastServes { // for diagnosis, on the harness's clock (the prompts go out ~2 s in)
				fmt.Fprintf(stderr, "fleet-cluster: %s: stream leader %q, whole %v, serving %v at %.1f s\n", fault, l, w, sv, time.Since(t0).Seconds())
				last, lastWhole, lastServes = l, w, sv
			}
			select {
			case <-pollCtx.Done():
				return
			case <-t.C:
			}
		}
	}()
	var (
		faults   []fleet.Fault
		killed   = -1
		burst    burstResult
		burstMu  sync.Mutex
		memKiB   int64
		watchers int
		note     string
		label    string
		at       = func(d time.Duration) fleet.Cond { return fleet.After(d) }
		and      = func(a, b fleet.Cond) fleet.Cond { return func(s *fleet.State) bool { return a(s) && b(s) } }
		partHost = 3 // a host with a server: its sessions see a minority server or none
	)
	switch fault {
	case "none":
		label = "none"
	case "leader":
		label = "bucket stream's leader killed at +4 s"
		faults = []fleet.Fault{
			{Name: "leader killed", When: at(4 * time.Second), Disturbs: true, Do: func() error {
				name := curLeader.Load().(string)
				for deadline := time.Now().Add(10 * time.Second); name == "" && time.Now().Before(deadline); {
					time.Sleep(50 * time.Millisecond) // a busy cluster answers late: the poller's next reading
					name = curLeader.Load().(string)
				}
				k, err := strconv.Atoi(strings.TrimPrefix(name, "s"))
				if err != nil {
					return fmt.Errorf("stream leader %q", name)
				}
				killed = k - 1
				c.kill(killed)
				note = "killed " + name
				return nil
			}},
			{Name: "new leader", Heals: true, Do: func() error { return nil },
				When: and(at(4*time.Second), func(*fleet.State) bool {
					l := curLeader.Load().(string)
					return killed >= 0 && l != "" && l != fmt.Sprintf("s%d", killed+1) && isServing.Load()
				})},
		}
	case "partition":
		// Healed once the stream has three current replicas again,
		// judged by a reading that began after the rejoin: the cluster
		// may need seconds to elect its leaders again (the server that
		// was cut off comes back with a higher term), and while it has
		// none nothing can be shared. The row says how long that took.
		label = fmt.Sprintf("host %d (with server s%d) cut off at +3 s, rejoined at +8 s", partHost, partHost)
		var rejoined time.Time
		var pollsAtRejoin int64
		faults = []fleet.Fault{
			{Name: "partitioned", When: at(3 * time.Second), Disturbs: true, Do: func() error { return partition(partHost, true) }},
			{Name: "rejoined", When: at(8 * time.Second), Do: func() error {
				rejoined, pollsAtRejoin = time.Now(), polls.Load()
				return partition(partHost, false)
			}},
			{Name: "cluster whole", Heals: true,
				When: func(*fleet.State) bool { return !rejoined.IsZero() && polls.Load() > pollsAtRejoin+1 && isWhole.Load() },
				Do: func() error {
					note = fmt.Sprintf("cluster whole and serving %.1f s after the rejoin", time.Since(rejoined).Seconds())
					return nil
				}},
		}
	case "restarts":
		// A rolling restart: s3 goes only once s2 caught up again (else
		// the stream would have one current replica: no quorum).
		label = "s2 killed +3 s, restarted with its store +5 s; then (s2 current) s3 killed, restarted 2 s later with its store lost"
		var s3killed time.Duration
		var pollsAtRestart int64 // a reading begun after s3's restart decides it is whole
		faults = []fleet.Fault{
			{Name: "s2 killed", When: at(3 * time.Second), Disturbs: true, Do: func() error { c.kill(1); return nil }},
			{Name: "s2 restarted (store kept)", When: at(5 * time.Second), Do: func() error { return c.restart(1, true) }},
			{Name: "s3 killed", When: and(at(6*time.Second), func(*fleet.State) bool { return isWhole.Load() }),
				Do: func() error { c.kill(2); return nil }},
			{Name: "s3 restarted (store lost)", When: func(s *fleet.State) bool {
				if s3killed == 0 && c.servers[2].cmd == nil {
					s3killed = s.Since
				}
				return s3killed > 0 && s.Since >= s3killed+2*time.Second
			}, Do: func() error { pollsAtRestart = polls.Load(); return c.restart(2, false) }},
			{Name: "cluster whole", Heals: true, Do: func() error { return nil },
				When: func(*fleet.State) bool {
					return s3killed > 0 && c.servers[2].cmd != nil && polls.Load() > pollsAtRestart+1 && isWhole.Load()
				}},
		}
	case "burst":
		label = fmt.Sprintf("burst of %d failure writes (10× N) at +4 s", 10*o.n)
		faults = []fleet.Fault{{Name: "burst", When: at(4 * time.Second), Do: func() error {
			go func() {
				r := runBurst(st, 10*o.n)
				burstMu.Lock()
				burst = r
				burstMu.Unlock()
			}()
			return nil
		}}}
	case "slow":
		// Not a disturbance: the cluster stays whole and every connection
		// up, so a proxy that takes the store for unavailable meanwhile
		// fell back while it was up.
		label = fmt.Sprintf("cluster routes delayed %v each way (store calls outlast the call timeout; connections answer) from the prompts to +%v", slowDelay, slowFor)
		faults = []fleet.Fault{{Name: "routes fast again", When: at(slowFor), Do: func() error { c.delayRoutes(0); return nil }}}
	default:
		return "", false, fmt.Errorf("unknown fault %q (want %s)", fault, strings.Join(allFaults, ", "))
	}
	cpu0 := c.cpuSeconds()
	start := time.Now()
	fmt.Fprintf(stderr, "fleet-cluster: %s: fleet starts at %.1f s\n", fault, start.Sub(t0).Seconds())
	cfg := fleet.Config{Bin: o.bin, N: o.n, Store: "nats", NATSURL: c.urls(), Retries: 4, Initial: 1,
		Outage: fleet.After(o.outage), Dir: filepath.Join(dir, "fleet"), Log: stderr, Timeout: o.timeout, DebugLog: true,
		Wrap:   func(i int) []string { return []string{"ip", "netns", "exec", hostNS(i%o.hosts + 1)} },
		Faults: faults,
		BeforePrompts: func() error {
			if fault != "slow" {
				return nil
			}
			c.delayRoutes(slowDelay)
			return nil
		},
		ReadStore: func() (circuit.Store, error) {
			return ctlStore(c.urls())
		},
		Sample: func(pids []int) {
			for _, p := range pids {
				memKiB += rssKiB(p)
			}
			watchers = consumers(nc, "KV_acp_guard_held")
		},
	}
	res, err := fleet.Run(ctx, cfg)
	if err != nil {
		return "", false, err
	}
	cpu := c.cpuSeconds() - cpu0
	if len(res.FailedAfterHealErrs) > 0 {
		var tally []string
		for k, v := range res.FailedAfterHealErrs {
			tally = append(tally, fmt.Sprintf("  %4d %s", v, k))
		}
		sort.Slice(tally, func(i, j int) bool { return tally[i][5:] < tally[j][5:] })
		fmt.Fprintf(stderr, "fleet-cluster: %s: circuit calls failed after healing, by second and error:\n%s\n", fault, strings.Join(tally, "\n"))
	}
	elapsed := time.Since(start)
	burstMu.Lock()
	b := burst
	burstMu.Unlock()
	if fault == "burst" {
		note = fmt.Sprintf("burst: %d calls in %.2f s, %d failed", b.calls, b.took.Seconds(), b.failed)
	}
	bad, timing := check(res)
	verdict := "meets all bounds"
	if miss := append(bad, timing...); len(miss) > 0 {
		verdict = "MISSES: " + strings.Join(miss, "; ")
	}
	if !o.timingBounds {
		timing = nil
	}
	if note != "" {
		note += "; "
	}
	if watchers < 0 {
		note += "held-prompt watchers at the outage's end not known (the stream's info did not answer within 2 s)"
	} else {
		note += fmt.Sprintf("%d held-prompt watchers at the outage's end", watchers)
	}
	verdict += " (" + note + ")"
	var answers []string
	for k, v := range res.Answers {
		answers = append(answers, fmt.Sprintf("%d %s", v, k))
	}
	sort.Strings(answers)
	ans := strings.Join(answers, ", ")
	if res.Extra > 0 {
		ans += fmt.Sprintf(", %d EXTRA", res.Extra)
	}
	resumed := "—"
	if res.StoreUp > 0 {
		resumed = fmt.Sprintf("%d proxies recovered +%.1f s … +%.1f s (each at its next call); %d calls failed after healing",
			res.Resumers, res.ResumedFirst.Seconds(), res.ResumedLast.Seconds(), res.FailedAfterHeal)
		if res.FailedAfterHeal > 0 {
			resumed += fmt.Sprintf(", the last +%.1f s", res.LastFailedAfterHeal.Seconds())
		}
	}
	row := fmt.Sprintf("| %s | %d / %d | %s | %d (%d + %d) | %d; %v | %d | %d (%d while up) | %s | %.1f MiB | %.1f s in %.1f s (%.0f%% of a core) | %.1f → %.1f | %s |",
		label, o.n, o.hosts, ans, res.OwnInOutage+res.RetriesInOutage, res.OwnInOutage, res.RetriesInOutage,
		res.MaxPerWindow, res.Windows, res.Probes, res.Unavailable, res.FellBack+res.FellBackLate, resumed,
		float64(memKiB)/1024/float64(o.n), cpu, elapsed.Seconds(), 100*cpu/elapsed.Seconds(),
		res.Load[0][0], res.Load[1][0], verdict)
	return row, len(bad)+len(timing) == 0, nil
}

// check is the bounds for a row: every session answered exactly
// once with the provider's success (so none got circuit_open while it
// was up), at most two retries reaching the provider per cooldown window
// fleet-wide, no proxy taking the store for unavailable while it was
// whole before the fault (bad), and sharing resumed within 5 s of healing,
// no proxy falling back later than that included (timing: on a busy
// machine a matter of load as much as of the code).
func check(r *fleet.Result) (bad, timing []string) {
	if r.Answers["ok"] != r.N || r.Extra != 0 {
		bad = append(bad, fmt.Sprintf("answers %v, %d extra", r.Answers, r.Extra))
	}
	if r.MaxPerWindow > 2 {
		bad = append(bad, fmt.Sprintf("%d retries in one cooldown window", r.MaxPerWindow))
	}
	if r.FellBack > 0 {
		bad = append(bad, fmt.Sprintf("%d proxies fell back while the store was whole", r.FellBack))
	}
	if r.FellBackLate > 0 {
		timing = append(timing, fmt.Sprintf("%d proxies fell back more than 5 s after healing", r.FellBackLate))
	}
	if r.StoreUp > 0 && r.LastFailedAfterHeal > 5*time.Second {
		timing = append(timing, fmt.Sprintf("a circuit call still failed %.1f s after healing", r.LastFailedAfterHeal.Seconds()))
	}
	for _, s := range r.Circuits {
		if s != circuit.StateClosed {
			bad = append(bad, "circuit "+s+" at the end")
		}
	}
	return bad, timing
}

type burstResult struct {
	calls, failed int
	took          time.Duration
}

// runBurst makes n failure reports at once from the control namespace,
// as ten times the fleet's sessions would: half on the fleet's own
// circuit (open: they read and write only what moves), half opening
// circuits of other models (each a write).
func runBurst(st circuit.Store, n int) burstResult {
	cs := circuit.New(circuit.Config{Store: st})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs, _ := st.List(ctx)
	key := circuit.Key{Namespace: fleet.Namespace, Provider: "codex-acp", Scope: "provider"}
	if len(recs) > 0 {
		key = recs[0].Key
	}
	var failed atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			k := key
			if i%2 == 1 {
				k.Model = fmt.Sprintf("burst-%d", i)
			}
			_, err := cs.Fail(ctx, k, circuit.Failure{Class: "transient", Code: "provider_unavailable", Backoff: time.Second},
				fmt.Sprintf("burst/%d", i), time.Now())
			if err != nil && !errors.Is(err, circuit.ErrContended) {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for i := 1; i < n; i += 2 { // the other models' circuits are the burst's, not the fleet's
		k := key
		k.Model = fmt.Sprintf("burst-%d", i)
		if k, err := k.Normalize(); err == nil {
			_ = st.Delete(ctx, k.ID())
		}
	}
	return burstResult{calls: n, failed: int(failed.Load()), took: took}
}
