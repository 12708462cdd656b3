package bench

import (
	"context"
	"testing"
	"time"
)

// baseline keeps the last bytecopy result of each workload so the
// acp-guard benchmark that follows it can report its ratio. Sub-benchmarks
// run one after another, so no lock is needed.
var baseline = map[string]Result{}

// BenchmarkE2E measures each workload in each configuration; one op is one
// prompt turn (for "roundtrip", one empty prompt round trip). Besides ns/op
// it reports MB/s and frames/s of agent→client traffic, the p50/p99 prompt
// latency, the relay's peak RSS and CPU time per op and, for acp-guard, the ratios to the
// bytecopy run just before it (throughput_x, p50_x).
//
//	go test -run '^$' -bench E2E ./dev/bench/
func BenchmarkE2E(b *testing.B) {
	for _, w := range Workloads() {
		b.Run(w.Name, func(b *testing.B) {
			for _, m := range Modes {
				b.Run(m.String(), func(b *testing.B) { benchmarkSession(b, m, w) })
			}
		})
	}
}

func benchmarkSession(b *testing.B, m Mode, w Workload) {
	s, err := Start(context.Background(), m, binaries(b).Argv(m, w), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Kill()
	for range w.Warmup {
		if _, err := s.Client.Prompt(); err != nil {
			b.Fatal(err)
		}
	}
	res := Result{Mode: m, Workload: w, Latencies: make([]time.Duration, 0, b.N)}
	var cpu0 time.Duration
	if m.Relayed() {
		if cpu0, err = s.CPUTime(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		t, err := s.Client.Prompt()
		if err != nil {
			b.Fatal(err)
		}
		res.Add(t)
	}
	b.StopTimer()
	if m.Relayed() {
		if res.PeakRSS, err = s.PeakRSS(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.PeakRSSMiB(), "rss_MiB")
		cpu1, err := s.CPUTime()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "relay_cpu_ns/op")
	}
	if err := s.Close(30 * time.Second); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.MBps(), "MB/s")
	b.ReportMetric(res.FramesPerSec(), "frames/s")
	b.ReportMetric(float64(res.Percentile(50)), "p50_ns")
	b.ReportMetric(float64(res.Percentile(99)), "p99_ns")
	switch m {
	case ByteCopy:
		baseline[w.Name] = res
	case Guard:
		if base, ok := baseline[w.Name]; ok {
			pair := []Result{base, res}
			if w.RoundTrip {
				b.ReportMetric(P50Ratio(pair, res), "p50_x")
			} else {
				b.ReportMetric(ThroughputRatio(pair, res), "throughput_x")
			}
		}
	}
}
