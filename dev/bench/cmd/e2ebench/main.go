// Command e2ebench runs the end-to-end relay benchmark and prints a Markdown
// report: for each workload, the client talking to the demo agent directly,
// through a byte-copy relay, and through acp-guard, in interleaved rounds,
// with the ratios acp-guard / bytecopy and the targets.
//
//	go run ./dev/bench/cmd/e2ebench [-rounds 5] [-workloads stream-64B,...]
//
// Without -guard and -bytecopy it builds both binaries into a temporary
// directory first.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/acp-guard/acp-guard/dev/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "e2ebench:", err)
		os.Exit(1)
	}
}

type options struct {
	rounds    int
	workloads []string
	scale     float64
	bins      bench.Binaries
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	var names string
	fs := flag.NewFlagSet("e2ebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.rounds, "rounds", 5, "sessions per configuration and workload, interleaved")
	fs.StringVar(&names, "workloads", "", "comma-separated workload names (default: all)")
	fs.Float64Var(&o.scale, "scale", 1, "multiply each workload's measured prompts by this")
	fs.StringVar(&o.bins.Guard, "guard", "", "acp-guard binary (default: build it)")
	fs.StringVar(&o.bins.ByteCopy, "bytecopy", "", "bytecopy binary (default: build it)")
	fs.StringVar(&o.bins.Agent, "agent", "", "binary run as `AGENT demo-agent` (default: the acp-guard binary)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if names != "" {
		o.workloads = strings.Split(names, ",")
	}
	if o.rounds < 1 || o.scale <= 0 {
		return fmt.Errorf("-rounds must be ≥ 1 and -scale > 0")
	}
	if o.bins.Guard == "" || o.bins.ByteCopy == "" {
		dir, err := os.MkdirTemp("", "e2ebench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(stderr, "building acp-guard and bytecopy…")
		built, err := bench.Build(ctx, dir)
		if err != nil {
			return err
		}
		if o.bins.Guard == "" {
			o.bins.Guard = built.Guard
		}
		if o.bins.ByteCopy == "" {
			o.bins.ByteCopy = built.ByteCopy
		}
	}
	return runBench(ctx, o, stdout, stderr)
}

func runBench(ctx context.Context, o options, stdout, stderr io.Writer) error {
	start := time.Now()
	var results []bench.Result
	for _, w := range bench.Workloads() {
		if o.workloads != nil && !slices.Contains(o.workloads, w.Name) {
			continue
		}
		prompts := max(1, int(float64(w.Prompts)*o.scale))
		merged := make([]bench.Result, len(bench.Modes))
		for round := range o.rounds {
			// Rotate the order so no configuration always runs first.
			for i := range bench.Modes {
				k := (i + round) % len(bench.Modes)
				m := bench.Modes[k]
				fmt.Fprintf(stderr, "%s round %d/%d: %s\n", w.Name, round+1, o.rounds, m)
				r, err := bench.Run(ctx, o.bins, m, w, prompts)
				if err != nil {
					return err
				}
				if round == 0 {
					merged[k] = r
				} else {
					merged[k].Merge(r)
				}
			}
		}
		results = append(results, merged...)
	}
	if len(results) == 0 {
		return fmt.Errorf("no workload matches %q", o.workloads)
	}
	fmt.Fprintf(stdout, "Machine: %s  \n", bench.ThisMachine())
	fmt.Fprintf(stdout, "Rounds: %d per configuration, interleaved; wall time %.0f s\n\n", o.rounds, time.Since(start).Seconds())
	for _, w := range bench.Workloads() {
		if o.workloads == nil || slices.Contains(o.workloads, w.Name) {
			fmt.Fprintf(stdout, "- %s\n", describe(w, o))
		}
	}
	fmt.Fprintln(stdout)
	return bench.Markdown(stdout, results)
}

func describe(w bench.Workload, o options) string {
	prompts := max(1, int(float64(w.Prompts)*o.scale))
	if w.RoundTrip {
		return fmt.Sprintf("`%s`: %d empty prompt round trips per session (after %d warm-up)", w.Name, prompts, w.Warmup)
	}
	size := fmt.Sprintf("demo-agent --size %d", w.Size)
	if w.Size < 200 {
		size += "; its smallest frame is about 160 B, see B/frame"
	}
	return fmt.Sprintf("`%s`: %d notifications per prompt (%s), %d prompts per session (after %d warm-up)", w.Name, w.Count, size, prompts, w.Warmup)
}
