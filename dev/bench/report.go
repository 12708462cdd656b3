package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Targets, as ratios to the byte-copy relay in the same run.
const (
	MinThroughputRatio = 0.9      // acp-guard / bytecopy, streaming workloads
	MaxP50Ratio        = 1.15     // acp-guard / bytecopy, round trips
	MaxStreamRSS       = 16 << 20 // bytes, acp-guard on streaming workloads
	// MaxSmallFrameCPURatio: relay CPU per prompt, acp-guard / bytecopy,
	// on streams of small frames (at most SmallFrame bytes each).
	MaxSmallFrameCPURatio = 2.0
	SmallFrame            = 1 << 10
)

// find returns the result of mode m on the workload named name.
func find(results []Result, name string, m Mode) (Result, bool) {
	for _, r := range results {
		if r.Workload.Name == name && r.Mode == m {
			return r, true
		}
	}
	return Result{}, false
}

// ThroughputRatio is r's throughput over the byte-copy relay's on the same
// workload (0 if either is missing).
func ThroughputRatio(results []Result, r Result) float64 {
	base, ok := find(results, r.Workload.Name, ByteCopy)
	if !ok || base.MBps() == 0 {
		return 0
	}
	return r.MBps() / base.MBps()
}

// P50Ratio is r's median prompt latency over the byte-copy relay's on the
// same workload (0 if either is missing).
func P50Ratio(results []Result, r Result) float64 {
	base, ok := find(results, r.Workload.Name, ByteCopy)
	if !ok || base.Percentile(50) == 0 {
		return 0
	}
	return float64(r.Percentile(50)) / float64(base.Percentile(50))
}

// CPURatio is the relay CPU time per prompt of r over the byte-copy
// relay's on the same workload (0 if either is missing or zero).
func CPURatio(results []Result, r Result) float64 {
	base, ok := find(results, r.Workload.Name, ByteCopy)
	if !ok || base.CPUPerPrompt() == 0 {
		return 0
	}
	return float64(r.CPUPerPrompt()) / float64(base.CPUPerPrompt())
}

// Check is one target and how acp-guard fared.
type Check struct {
	Target string
	Got    string
	OK     bool
}

// Checks evaluates the targets for every workload that has both an
// acp-guard and a bytecopy result.
func Checks(results []Result) []Check {
	var out []Check
	for _, g := range results {
		if g.Mode != Guard {
			continue
		}
		if _, ok := find(results, g.Workload.Name, ByteCopy); !ok {
			continue
		}
		name := g.Workload.Name
		if g.Workload.RoundTrip || g.Workload.PingPong {
			r := P50Ratio(results, g)
			out = append(out, Check{
				Target: fmt.Sprintf("%s: p50 latency ≤ %.2f× bytecopy", name, MaxP50Ratio),
				Got:    fmt.Sprintf("%.2f×", r), OK: r <= MaxP50Ratio,
			})
			continue
		}
		r := ThroughputRatio(results, g)
		out = append(out, Check{
			Target: fmt.Sprintf("%s: throughput ≥ %.1f× bytecopy", name, MinThroughputRatio),
			Got:    fmt.Sprintf("%.2f×", r), OK: r >= MinThroughputRatio,
		})
		if g.Workload.Size <= SmallFrame {
			c := CPURatio(results, g)
			out = append(out, Check{
				Target: fmt.Sprintf("%s: relay CPU ≤ %.0f× bytecopy", name, MaxSmallFrameCPURatio),
				Got:    fmt.Sprintf("%.1f×", c), OK: c > 0 && c <= MaxSmallFrameCPURatio,
			})
		}
		out = append(out, Check{
			Target: fmt.Sprintf("%s: peak RSS ≤ %d MiB", name, MaxStreamRSS>>20),
			Got:    fmt.Sprintf("%.1f MiB", g.PeakRSSMiB()), OK: g.PeakRSS <= MaxStreamRSS,
		})
	}
	return out
}

// Markdown writes the results as a Markdown table, one row per result in
// the order given, followed by the target checks.
func Markdown(w io.Writer, results []Result) error {
	var b strings.Builder
	b.WriteString("| workload | config | B/frame | MB/s | frames/s | p50 | p99 | peak RSS | relay CPU/prompt | throughput ÷ bytecopy | p50 ÷ bytecopy | CPU ÷ bytecopy |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range results {
		rss, cpu, cr := "—", "—", "—"
		if r.Mode.Relayed() {
			rss = fmt.Sprintf("%.1f MiB", r.PeakRSSMiB())
			cpu = fmtDuration(r.CPUPerPrompt())
			if x := CPURatio(results, r); x > 0 && r.Mode != ByteCopy {
				cr = fmt.Sprintf("%.1f×", x)
			}
		}
		tr, pr := "—", "—"
		if r.Mode != ByteCopy {
			if x := ThroughputRatio(results, r); x > 0 {
				tr = fmt.Sprintf("%.2f×", x)
			}
			if x := P50Ratio(results, r); x > 0 {
				pr = fmt.Sprintf("%.2f×", x)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.1f | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Workload.Name, r.Mode, r.BytesPerFrame(), r.MBps(), humanCount(r.FramesPerSec()),
			fmtDuration(r.Percentile(50)), fmtDuration(r.Percentile(99)), rss, cpu, tr, pr, cr)
	}
	if checks := Checks(results); len(checks) > 0 {
		b.WriteString("\n| target | acp-guard | met |\n|---|--:|:-:|\n")
		for _, c := range checks {
			met := "yes"
			if !c.OK {
				met = "**no**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Target, c.Got, met)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fmtDuration prints d with three significant digits in µs or ms.
func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// humanCount prints n rounded, with k/M suffixes above ten thousand.
func humanCount(n float64) string {
	switch {
	case n >= 1e7:
		return fmt.Sprintf("%.1f M", n/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.0f k", n/1e3)
	}
	return fmt.Sprintf("%.0f", n)
}
