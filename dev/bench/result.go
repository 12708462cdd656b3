package bench

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Result is what one configuration measured on one workload, possibly
// merged over several sessions.
type Result struct {
	Mode      Mode
	Workload  Workload
	Prompts   int           // measured prompts
	Frames    int64         // lines read by the client during measured prompts
	Bytes     int64         // bytes read by the client during measured prompts
	Elapsed   time.Duration // sum of the measured prompts' times
	Latencies []time.Duration
	PeakRSS   int64 // bytes; the relay's VmHWM (0 in Direct mode)
	// RelayCPU is the CPU time (user+system; the scheduler's nanosecond
	// accounting, Session.CPUTime) the relay process used during the
	// measured prompts (0 in Direct mode). Unlike wall time it hardly
	// depends on what else the machine is doing.
	RelayCPU time.Duration
}

// Add accounts one measured prompt: its latency, or on a PingPong
// workload the latencies of its hops.
func (r *Result) Add(t Turn) {
	r.Prompts++
	r.Frames += t.Frames
	r.Bytes += t.Bytes
	r.Elapsed += t.Elapsed
	if r.Workload.PingPong {
		r.Latencies = append(r.Latencies, t.Hops...)
		return
	}
	r.Latencies = append(r.Latencies, t.Elapsed)
}

// Merge folds o (the same mode and workload, another session) into r:
// counts and times add up, latencies pool, the peak RSS is the larger.
func (r *Result) Merge(o Result) {
	r.Prompts += o.Prompts
	r.Frames += o.Frames
	r.Bytes += o.Bytes
	r.Elapsed += o.Elapsed
	r.Latencies = append(r.Latencies, o.Latencies...)
	r.PeakRSS = max(r.PeakRSS, o.PeakRSS)
	r.RelayCPU += o.RelayCPU
}

// CPUPerPrompt is the relay's CPU time per measured prompt.
func (r Result) CPUPerPrompt() time.Duration {
	if r.Prompts == 0 {
		return 0
	}
	return r.RelayCPU / time.Duration(r.Prompts)
}

// MBps is throughput in megabytes (10^6 bytes) per second of prompt time.
func (r Result) MBps() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds()
}

// FramesPerSec is frames read per second of prompt time.
func (r Result) FramesPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Frames) / r.Elapsed.Seconds()
}

// BytesPerFrame is the mean frame size, terminator included.
func (r Result) BytesPerFrame() int64 {
	if r.Frames == 0 {
		return 0
	}
	return r.Bytes / r.Frames
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of the prompt
// latencies by the nearest-rank method, or 0 when there are none.
func (r Result) Percentile(p float64) time.Duration {
	return percentile(r.Latencies, p)
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	rank := int(p/100*float64(len(s)) + 0.999999999)
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// PeakRSSMiB is PeakRSS in MiB.
func (r Result) PeakRSSMiB() float64 { return float64(r.PeakRSS) / (1 << 20) }

// Run starts mode m around the agent of workload w, runs w.Warmup
// unmeasured and then prompts measured prompts, reads the relay's peak RSS
// and closes the session.
func Run(ctx context.Context, b Binaries, m Mode, w Workload, prompts int) (Result, error) {
	s, err := Start(ctx, m, b.Argv(m, w), nil)
	if err != nil {
		return Result{}, err
	}
	res, err := Measure(s, w, prompts)
	if err != nil {
		s.Kill()
		return res, err
	}
	return res, s.Close(30 * time.Second)
}

// Measure runs w.Warmup unmeasured and then prompts measured prompts in an
// open session, and reads the relay's peak RSS. It does not close s.
func Measure(s *Session, w Workload, prompts int) (Result, error) {
	res := Result{Mode: s.Mode, Workload: w, Latencies: make([]time.Duration, 0, prompts)}
	var cpu0 time.Duration
	for i := range w.Warmup + prompts {
		if i == w.Warmup && s.Mode.Relayed() {
			var err error
			if cpu0, err = s.CPUTime(); err != nil {
				return res, fmt.Errorf("%s: CPU time: %w", s.Mode, err)
			}
		}
		t, err := s.Client.Prompt()
		if err != nil {
			return res, fmt.Errorf("%s %s: prompt %d: %w%s", s.Mode, w.Name, i+1, err, s.stderrNote())
		}
		if i >= w.Warmup {
			res.Add(t)
		}
	}
	if s.Mode.Relayed() {
		cpu1, err := s.CPUTime()
		if err != nil {
			return res, fmt.Errorf("%s: CPU time: %w", s.Mode, err)
		}
		res.RelayCPU = cpu1 - cpu0
		rss, err := s.PeakRSS()
		if err != nil {
			return res, fmt.Errorf("%s: peak RSS: %w", s.Mode, err)
		}
		res.PeakRSS = rss
	}
	return res, nil
}
