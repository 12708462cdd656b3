package bench

import (
	"fmt"
	"strconv"
)

// Mode is one way of connecting the client to the agent.
type Mode int

const (
	Direct   Mode = iota // the client talks to the agent itself
	ByteCopy             // through dev/bench/cmd/bytecopy (two io.Copy calls)
	Guard                // through acp-guard
)

// Modes lists the configurations in the order they are run and printed.
var Modes = []Mode{Direct, ByteCopy, Guard}

func (m Mode) String() string {
	switch m {
	case Direct:
		return "direct"
	case ByteCopy:
		return "bytecopy"
	case Guard:
		return "acp-guard"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// Relayed reports whether a relay process sits between client and agent.
func (m Mode) Relayed() bool { return m != Direct }

// Workload is what the demo agent does for each prompt.
type Workload struct {
	Name     string // short name used in benchmark names and tables
	Scenario string // demo-agent --scenario
	Count    int    // stream: notifications per prompt
	Size     int    // stream: bytes per notification frame, newline included
	// Prompts is how many measured prompts one session runs in e2ebench;
	// Warmup prompts before them are not measured.
	Prompts, Warmup int
	// RoundTrip marks a workload whose measure is the prompt latency
	// rather than throughput.
	RoundTrip bool
	// PingPong marks a workload whose measure is the latency of the
	// agent's requests within a turn (Turn.Hops): frames a relay passes
	// as they are. Count is the requests per prompt.
	PingPong bool
}

// Workloads returns the four workloads of the benchmark: 20,000
// notifications of 64 bytes per prompt, 200 notifications of 64 KiB per
// prompt, 2,000 empty prompt round trips, and 2,000 pass-through round
// trips (an agent's fs/read_text_file request and the client's answer,
// 200 per prompt).
func Workloads() []Workload {
	return []Workload{
		{Name: "stream-64B", Scenario: "stream", Count: 20000, Size: 64, Prompts: 20, Warmup: 2},
		{Name: "stream-64KiB", Scenario: "stream", Count: 200, Size: 64 << 10, Prompts: 8, Warmup: 1},
		{Name: "roundtrip", Scenario: "empty", Prompts: 2000, Warmup: 50, RoundTrip: true},
		{Name: "pingpong", Scenario: "pingpong", Count: 200, Prompts: 10, Warmup: 1, PingPong: true},
	}
}

// AgentArgs returns the demo-agent arguments (after the acp-guard binary)
// that produce w.
func (w Workload) AgentArgs() []string {
	args := []string{"demo-agent", "--scenario", w.Scenario}
	if w.Count > 0 {
		args = append(args, "--count", strconv.Itoa(w.Count))
	}
	if w.Size > 0 {
		args = append(args, "--size", strconv.Itoa(w.Size))
	}
	return args
}

func (w Workload) String() string {
	if w.PingPong {
		return fmt.Sprintf("%s (%d prompts of %d agent requests)", w.Name, w.Prompts, w.Count)
	}
	if w.RoundTrip {
		return fmt.Sprintf("%s (%d empty prompts)", w.Name, w.Prompts)
	}
	return fmt.Sprintf("%s (%d × %d B per prompt)", w.Name, w.Count, w.Size)
}
