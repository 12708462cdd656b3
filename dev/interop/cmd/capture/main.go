// Command capture records real ACP agents failing against the fake provider.
//
//	capture [-agent codex,claude,gemini|all] [-scenario NAME,...|all]
//	        [-cache DIR] [-out testdata/transcripts/real] [-timeout 60s] [-list]
//
// Each capture writes OUT/<agent>/<scenario>.jsonl (the transcript) and
// OUT/<agent>/<scenario>.provider.json (script, settings and the requests
// the fake provider saw). Install the agents first with dev/interop/install.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/acp-guard/acp-guard/dev/interop/capture"
	"github.com/acp-guard/acp-guard/internal/platform"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, platform.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func defaultCache() string {
	if c := os.Getenv("ACP_GUARD_CACHE"); c != "" {
		return c
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "acp-guard-interop")
}

func pick(arg string, all []string) ([]string, error) {
	if arg == "all" {
		return all, nil
	}
	known := map[string]bool{}
	for _, a := range all {
		known[a] = true
	}
	var out []string
	for _, a := range strings.Split(arg, ",") {
		if !known[a] {
			return nil, fmt.Errorf("unknown name %q (known: %s)", a, strings.Join(all, ", "))
		}
		out = append(out, a)
	}
	return out, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("capture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	agentArg := fs.String("agent", "all", "agents, comma-separated, or all")
	scenArg := fs.String("scenario", "all", "scenarios, comma-separated, or all")
	cache := fs.String("cache", defaultCache(), "agent install folder (dev/interop/install.sh)")
	out := fs.String("out", "testdata/transcripts/real", "transcript root")
	timeout := fs.Duration("timeout", 0, "per-capture timeout (default: the scenario's)")
	verbose := fs.Bool("v", false, "copy the fake provider's request log to stderr")
	list := fs.Bool("list", false, "list agents and scenarios")
	summarize := fs.Bool("summarize", false, "print a Markdown summary of the captures in -out instead of capturing")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *list {
		fmt.Fprintf(stdout, "agents: %s\nscenarios: %s\n", strings.Join(capture.AgentNames(), " "), strings.Join(capture.ScenarioNames(), " "))
		return 0
	}
	agents, err := pick(*agentArg, capture.AgentNames())
	if err != nil {
		fmt.Fprintln(stderr, "capture: -agent:", err)
		return 2
	}
	scens, err := pick(*scenArg, capture.ScenarioNames())
	if err != nil {
		fmt.Fprintln(stderr, "capture: -scenario:", err)
		return 2
	}
	if *summarize {
		for _, a := range agents {
			var sums []capture.Summary
			for _, s := range scens {
				sum, err := capture.Summarize(*out, a, s)
				if err != nil {
					continue // not captured
				}
				sums = append(sums, sum)
			}
			capture.Markdown(stdout, sums)
		}
		return 0
	}
	var logw io.Writer = io.Discard
	if *verbose {
		logw = stderr
	}
	failed := 0
	for _, a := range agents {
		agent := capture.Agents()[a]
		for _, s := range scens {
			sc := capture.Scenarios()[s]
			if sc.Script(agent.API) == nil {
				continue
			}
			start := time.Now()
			side, err := capture.Capture(ctx, capture.Config{Agent: agent, Scenario: sc, Cache: *cache, OutDir: *out, Timeout: *timeout, Log: logw})
			if err != nil {
				fmt.Fprintf(stderr, "capture: %s/%s: %v\n", a, s, err)
				failed++
				continue
			}
			outcome := "stopReason=" + side.Result.StopReason
			if side.Result.Error != nil {
				outcome = side.Result.ErrorMethod + " error=" + string(side.Result.Error)
			}
			if side.Result.TimedOut {
				outcome += " (timed out)"
			}
			fmt.Fprintf(stdout, "%s/%s: %.1fs requests=%v exit=%d %s\n", a, s, time.Since(start).Seconds(), side.Routes, side.Result.ExitCode, outcome)
			if ctx.Err() != nil {
				return 1
			}
		}
	}
	if failed > 0 {
		return 1
	}
	return 0
}
