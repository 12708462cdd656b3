// Command fleet runs the fleet measurement of shared circuits (package
// fleet) and prints a Markdown table: `make fleet` runs it for N = 50, 100
// and 200 through NATS and the file store, one NATS kill-and-restart, the
// issue's small case (20 sessions, 3 retries, a 5 s outage) and the
// baseline without circuits. The exit status is 1 when a run with circuits
// misses the conditions (Result.Check).
package main

import (
	"context"
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
	"time"

	"github.com/acp-guard/acp-guard/dev/fleet"
	"github.com/acp-guard/acp-guard/internal/platform"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type options struct {
	bin, dir         string
	sizes            []int
	stores           []string
	retries, initial int
	outage           time.Duration
	restart          bool
	small, baseline  bool
	overlay          bool
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	sizes := fs.String("n", "50,100,200", "session counts to run")
	stores := fs.String("stores", "nats,file", "stores to run each size with (nats, file, off)")
	fs.StringVar(&o.bin, "bin", "", "acp-guard binary (default: build ./cmd/acp-guard)")
	fs.StringVar(&o.dir, "dir", "", "work directory (default: a new temporary one, removed afterwards)")
	fs.IntVar(&o.retries, "retries", 4, "each session's retries")
	fs.IntVar(&o.initial, "initial", 1, "each session's first retry delay, in seconds (doubling)")
	fs.DurationVar(&o.outage, "outage", 10*time.Second, "the provider's outage, from the prompts")
	fs.BoolVar(&o.restart, "restart", true, "also run the largest size through NATS with the server killed at +4 s and started again at +7 s")
	fs.BoolVar(&o.small, "small", true, "also run 20 sessions, 3 retries, a 5 s outage (nats and file)")
	fs.BoolVar(&o.baseline, "baseline", true, "also run the largest size with circuits off")
	fs.BoolVar(&o.overlay, "overlay", false, "instead: measure from `acp-guard catalogue publish` to every session classifying with the overlay, for each size and store")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(stderr, "fleet: -n %q: want positive counts\n", *sizes)
			return 2
		}
		o.sizes = append(o.sizes, n)
	}
	o.stores = strings.Split(*stores, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, platform.SIGTERM)
	defer stop()
	if o.dir == "" {
		d, err := os.MkdirTemp("", "acp-guard-fleet-")
		if err != nil {
			fmt.Fprintln(stderr, "fleet:", err)
			return 1
		}
		defer os.RemoveAll(d)
		o.dir = d
	}
	if o.bin == "" {
		o.bin = filepath.Join(o.dir, "acp-guard")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", o.bin, "./cmd/acp-guard")
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(stderr, "fleet: building acp-guard:", err)
			return 1
		}
	}
	if o.overlay {
		return measureOverlay(ctx, o, stdout, stderr)
	}
	return measure(ctx, o, stdout, stderr)
}

// measureOverlay prints, per size and store, how long after the start of
// `catalogue publish` the sessions took up the overlay (p50, max) and how
// many classified their next failing turn with its rule.
func measureOverlay(ctx context.Context, o options, stdout, stderr io.Writer) int {
	fmt.Fprintln(stdout, "| N | store | publish command | taken up after the publish (p50; p90; max) | next turn classified by the overlay's rule | load avg (1 min, start → end) |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|")
	status := 0
	ms := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s" }
	for _, n := range o.sizes {
		for _, st := range o.stores {
			res, err := fleet.RunOverlay(ctx, fleet.OverlayConfig{Bin: o.bin, N: n, Store: st, Overlay: []byte(fleet.DemoOverlay),
				Rule: fleet.DemoOverlayRule, Dir: filepath.Join(o.dir, fmt.Sprintf("overlay-%s-%d", st, n)),
				Log: func(format string, args ...any) { fmt.Fprintf(stderr, "fleet: "+format+"\n", args...) }})
			if err != nil {
				fmt.Fprintf(stderr, "fleet: overlay N=%d %s: %v\n", n, st, err)
				status = 1
				if ctx.Err() != nil {
					return status
				}
				continue
			}
			fmt.Fprintf(stdout, "| %d | %s | %s | %s; %s; %s | %d of %d | %.1f → %.1f |\n", res.N, res.Store, ms(res.Publish),
				ms(fleet.Quantile(res.Ready, 0.5)), ms(fleet.Quantile(res.Ready, 0.9)), ms(res.Ready[len(res.Ready)-1]),
				res.Classified, res.N, res.Load[0][0], res.Load[1][0])
			if res.Classified != res.N {
				status = 1
			}
		}
	}
	return status
}

type plan struct {
	name string
	cfg  fleet.Config
}

func plans(o options) []plan {
	var ps []plan
	add := func(name string, cfg fleet.Config) {
		cfg.Bin, cfg.Dir = o.bin, filepath.Join(o.dir, fmt.Sprintf("run-%02d", len(ps)))
		ps = append(ps, plan{name, cfg})
	}
	for _, n := range o.sizes {
		for _, st := range o.stores {
			add("outage", fleet.Config{N: n, Store: st, Retries: o.retries, Initial: o.initial, Outage: fleet.After(o.outage)})
		}
	}
	largest := o.sizes[len(o.sizes)-1]
	if o.restart {
		add("NATS killed +4 s, back +7 s", fleet.Config{N: largest, Store: "nats", Retries: o.retries, Initial: o.initial,
			Outage: fleet.After(o.outage), StoreDown: fleet.After(4 * time.Second), StoreUp: fleet.After(7 * time.Second)})
	}
	if o.small {
		for _, st := range []string{"nats", "file"} {
			add("small", fleet.Config{N: 20, Store: st, Retries: 3, Initial: 1, Outage: fleet.After(5 * time.Second)})
		}
	}
	if o.baseline {
		add("circuits off", fleet.Config{N: largest, Store: "off", Retries: o.retries, Initial: o.initial, Outage: fleet.After(o.outage)})
	}
	return ps
}

func measure(ctx context.Context, o options, stdout, stderr io.Writer) int {
	fmt.Fprintln(stdout, "| run | N | store | policy | attempts during the outage (own + retries) | retries per cooldown window (max; each) | probes | release after the outage (first – last; busiest 100 ms) | answers | store | load avg (1 min, start → end) | elapsed |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	status := 0
	for _, p := range plans(o) {
		p.cfg.Log = stderr
		res, err := fleet.Run(ctx, p.cfg)
		if err != nil {
			fmt.Fprintf(stderr, "fleet: %s N=%d %s: %v\n", p.name, p.cfg.N, p.cfg.Store, err)
			status = 1
			if ctx.Err() != nil {
				return status
			}
			continue
		}
		fmt.Fprintln(stdout, row(p.name, res))
		if bad := res.Check(); len(bad) > 0 && res.Store != "off" {
			fmt.Fprintf(stderr, "fleet: %s N=%d %s misses: %s\n", p.name, res.N, res.Store, strings.Join(bad, "; "))
			status = 1
		}
	}
	return status
}

func row(name string, r *fleet.Result) string {
	ms := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s" }
	policy := fmt.Sprintf("%d× from %d s, outage %s", r.Retries, r.Initial, ms(r.Outage))
	store := "—"
	switch {
	case r.Store == "off":
	case r.StoreDown > 0:
		store = fmt.Sprintf("%d fell back while up; %d saw it down; resumed +%s…+%s after the restart (%d proxies)",
			r.FellBack+r.FellBackLate, r.Unavailable, ms(r.ResumedFirst), ms(r.ResumedLast), r.Resumers)
	default:
		store = fmt.Sprintf("%d fell back", r.FellBack+r.FellBackLate)
	}
	if r.Store != "off" {
		store += "; circuit " + strings.Join(r.Circuits, ",") + " at the end"
	}
	windows := fmt.Sprintf("%d; %v", r.MaxPerWindow, r.Windows)
	if r.StoreDown > 0 {
		windows += fmt.Sprintf(" (after the restart: max %d)", r.MaxPerWindowAfterRestart)
	}
	var answers []string
	for k, v := range r.Answers {
		answers = append(answers, fmt.Sprintf("%d %s", v, k))
	}
	sort.Strings(answers)
	ans := strings.Join(answers, ", ")
	if r.Extra > 0 {
		ans += fmt.Sprintf(", %d EXTRA", r.Extra)
	}
	return fmt.Sprintf("| %s | %d | %s | %s | %d (%d + %d) | %s | %d | %s – %s; %d | %s | %s | %.1f → %.1f | %s |",
		name, r.N, r.Store, policy, r.OwnInOutage+r.RetriesInOutage, r.OwnInOutage, r.RetriesInOutage, windows, r.Probes,
		ms(r.ReleaseFirst), ms(r.ReleaseLast), r.BusiestRelease, ans, store, r.Load[0][0], r.Load[1][0], ms(r.Elapsed))
}
