package bench

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var d []time.Duration
		for _, x := range n {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	for _, tt := range []struct {
		name string
		d    []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"median of odd", ms(5, 1, 3), 50, 3 * time.Millisecond},
		{"median of even takes the lower", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"p99 of 100", ms(seq(1, 100)...), 99, 99 * time.Millisecond},
		{"p100 is the max", ms(seq(1, 100)...), 100, 100 * time.Millisecond},
		{"p1 of 100", ms(seq(1, 100)...), 1, 1 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.d, tt.p); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func TestResultAddMerge(t *testing.T) {
	var a Result
	a.Add(Turn{Frames: 10, Bytes: 1_000_000, Elapsed: 500 * time.Millisecond})
	b := Result{PeakRSS: 5 << 20}
	b.Add(Turn{Frames: 30, Bytes: 1_000_000, Elapsed: 500 * time.Millisecond})
	a.PeakRSS = 3 << 20
	a.RelayCPU = 4 * time.Millisecond
	b.RelayCPU = 6 * time.Millisecond
	a.Merge(b)
	if a.Prompts != 2 || a.Frames != 40 || a.Bytes != 2_000_000 || a.Elapsed != time.Second || len(a.Latencies) != 2 {
		t.Errorf("got %+v, want 2 prompts, 40 frames, 2e6 bytes, 1s, 2 latencies", a)
	}
	if got, want := a.PeakRSS, int64(5<<20); got != want {
		t.Errorf("got peak RSS %d, want %d", got, want)
	}
	if got, want := a.MBps(), 2.0; got != want {
		t.Errorf("got %v MB/s, want %v", got, want)
	}
	if got, want := a.FramesPerSec(), 40.0; got != want {
		t.Errorf("got %v frames/s, want %v", got, want)
	}
	if got, want := a.CPUPerPrompt(), 5*time.Millisecond; got != want {
		t.Errorf("got CPU per prompt %v, want %v", got, want)
	}
	if got := (Result{}).CPUPerPrompt(); got != 0 {
		t.Errorf("empty result: got CPU per prompt %v, want 0", got)
	}
	if got, want := a.BytesPerFrame(), int64(50_000); got != want {
		t.Errorf("got %d bytes per frame, want %d", got, want)
	}
	if got := (Result{}).BytesPerFrame(); got != 0 {
		t.Errorf("empty result: got %d bytes per frame, want 0", got)
	}
	if got := (Result{}).MBps(); got != 0 {
		t.Errorf("empty result: got %v MB/s, want 0", got)
	}
}

// fake builds a result with the given throughput (MB/s over one second),
// median latency and RSS.
func fake(w Workload, m Mode, mbps float64, p50 time.Duration, rssMiB int64) Result {
	r := Result{Mode: m, Workload: w, Prompts: 1, Bytes: int64(mbps * 1e6), Frames: 1000,
		Elapsed: time.Second, Latencies: []time.Duration{p50}, PeakRSS: rssMiB << 20}
	if m.Relayed() {
		r.RelayCPU = time.Duration(rssMiB) * time.Millisecond // any figure that differs
	}
	return r
}

func TestChecks(t *testing.T) {
	small, large, rt, pp := Workloads()[0], Workloads()[1], Workloads()[2], Workloads()[3]
	results := []Result{
		fake(small, Direct, 1000, time.Millisecond, 0),
		fake(small, ByteCopy, 500, time.Millisecond, 3),
		fake(small, Guard, 450, time.Millisecond, 16), // exactly at both limits
		fake(large, ByteCopy, 1000, time.Millisecond, 3),
		fake(large, Guard, 890, time.Millisecond, 17),
		fake(rt, ByteCopy, 1, 100*time.Microsecond, 3),
		fake(rt, Guard, 1, 116*time.Microsecond, 8),
		fake(pp, ByteCopy, 1, 100*time.Microsecond, 3),
		fake(pp, Guard, 1, 115*time.Microsecond, 8), // exactly at the limit
	}
	results[2].RelayCPU = 2 * results[1].RelayCPU // exactly at the CPU limit
	got := Checks(results)
	want := []struct {
		prefix string
		ok     bool
	}{
		{"stream-64B: throughput", true},
		{"stream-64B: relay CPU", true},
		{"stream-64B: peak RSS", true},
		{"stream-64KiB: throughput", false},
		{"stream-64KiB: peak RSS", false},
		{"roundtrip: p50", false},
		{"pingpong: p50", true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d checks %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i].Target, w.prefix) || got[i].OK != w.ok {
			t.Errorf("check %d: got %q ok=%v, want %q… ok=%v", i, got[i].Target, got[i].OK, w.prefix, w.ok)
		}
	}
	// Without a bytecopy result there is nothing to compare with.
	if got := Checks(results[2:3]); len(got) != 0 {
		t.Errorf("got %d checks without a baseline, want 0", len(got))
	}
}

func TestMarkdown(t *testing.T) {
	small := Workloads()[0]
	results := []Result{
		fake(small, Direct, 1000, 2*time.Millisecond, 0),
		fake(small, ByteCopy, 500, 4*time.Millisecond, 3),
		fake(small, Guard, 250, 8*time.Millisecond, 12),
	}
	var b strings.Builder
	if err := Markdown(&b, results); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| stream-64B | direct | 1000000 | 1000.0 | 1000 | 2.00 ms | 2.00 ms | — | — | 2.00× | 0.50× | — |",
		"| stream-64B | bytecopy | 500000 | 500.0 | 1000 | 4.00 ms | 4.00 ms | 3.0 MiB | 3.00 ms | — | — | — |",
		"| stream-64B | acp-guard | 250000 | 250.0 | 1000 | 8.00 ms | 8.00 ms | 12.0 MiB | 12.00 ms | 0.50× | 2.00× | 4.0× |",
		"| stream-64B: throughput ≥ 0.9× bytecopy | 0.50× | **no** |",
		"| stream-64B: peak RSS ≤ 16 MiB | 12.0 MiB | yes |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing row %q in\n%s", want, out)
		}
	}
}

func TestFormatting(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{fmtDuration(0), "—"},
		{fmtDuration(1500 * time.Nanosecond), "1.5 µs"},
		{fmtDuration(2500 * time.Microsecond), "2.50 ms"},
		{fmtDuration(3 * time.Second), "3.00 s"},
		{humanCount(999), "999"},
		{humanCount(25_400), "25 k"},
		{humanCount(12_300_000), "12.3 M"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestParseVmHWM(t *testing.T) {
	for _, tt := range []struct {
		name    string
		status  string
		want    int64
		wantErr bool
	}{
		{"present", "Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    2560 kB\nVmRSS:\t 2000 kB\n", 2560 << 10, false},
		{"missing", "Name:\tx\n", 0, true},
		{"bad unit", "VmHWM:\t 12 MB\n", 0, true},
		{"bad number", "VmHWM:\t x kB\n", 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseVmHWM([]byte(tt.status))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseStatCPU(t *testing.T) {
	for _, tt := range []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{"plain", "42 (acp-guard) S 1 42 42 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 5 0 100 0", 2800 * time.Millisecond, false},
		{"name with spaces and parens", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0", 30 * time.Millisecond, false},
		{"no name", "7 R 1", 0, true},
		{"truncated", "7 (x) R 1 2 3", 0, true},
		{"not a number", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 x 2 0 0", 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseSchedstat(t *testing.T) {
	for _, tt := range []struct {
		name    string
		line    string
		want    time.Duration
		wantErr bool
	}{
		{"plain", "123456789 2000 17\n", 123456789, false},
		{"empty", "", 0, true},
		{"not a number", "x 1 2\n", 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSchedstat([]byte(tt.line))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestSchedstatCPUOwnProcess(t *testing.T) {
	dir := "/proc/self"
	if _, err := os.Stat(dir + "/task"); err != nil {
		t.Skip("no /proc")
	}
	d, err := schedstatCPU(dir)
	if err != nil {
		t.Skipf("schedstat unavailable: %v", err)
	}
	if d <= 0 {
		t.Errorf("own CPU time %v, want > 0", d)
	}
}

func TestCPUModel(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: X\nmodel name\t: Some CPU @ 2.0GHz\nprocessor\t: 1\nmodel name\t: Other\n"
	if got, want := cpuModel([]byte(info)), "Some CPU @ 2.0GHz"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := cpuModel([]byte("processor\t: 0\n")); got != "" {
		t.Errorf("got %q, want empty", got)
	}
}
