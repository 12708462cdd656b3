package transport_test

import (
	"math/rand/v2"
	"strconv"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// faultScenario is one run of the randomized fault test: what the hostile
// agent does (Agent) and what the hostile client does. It is drawn from
// (seed, run) alone, so a failing run is reproduced by its seed and index.
type faultScenario struct {
	Seed  uint64    `json:"seed"`
	Run   int       `json:"run"`
	Agent faultPlan `json:"agent"`

	Prompts []clientTurn `json:"prompts,omitempty"` // the client's prompts, one after another
	// Signal (SIGTERM, SIGINT, SIGHUP) goes to acp-guard before prompt
	// SignalAt is sent (SignalAt == len(Prompts): after the last answer),
	// or, with SignalMid ≥ 0, once SignalMid frames of that prompt's turn
	// arrived. Early: instead, SIGTERM EarlyMs after the stop signals were
	// caught, with only initialize sent.
	Signal    string  `json:"signal,omitempty"`
	SignalAt  int     `json:"signalAt,omitempty"`
	SignalMid int     `json:"signalMid,omitempty"`
	Early     bool    `json:"early,omitempty"`
	EarlyMs   float64 `json:"earlyMs,omitempty"`

	SlowRead    bool `json:"slowRead,omitempty"`    // reads stdout in small pieces, pausing between them
	DupAnswers  bool `json:"dupAnswers,omitempty"`  // answers each agent request twice
	StrayAnswer bool `json:"strayAnswer,omitempty"` // answers an id the agent never sent
	Oversize    bool `json:"oversize,omitempty"`    // sends a request over the line cap
	Garbage     bool `json:"garbage,omitempty"`     // sends a line that is not JSON
	CutAtEnd    bool `json:"cutAtEnd,omitempty"`    // ends its input with a frame cut off
	CloseEarly  bool `json:"closeEarly,omitempty"`  // closes its input right after the last prompt
}

// clientTurn is one prompt of the client.
type clientTurn struct {
	// CancelAfter ≥ 0: send session/cancel once that many frames of the
	// turn arrived (0: right after the prompt); -1: never.
	CancelAfter int `json:"cancelAfter"`
}

// Attempt plans of the agent: the first attempt of a prompt may end the
// agent (terminal); retries never do, so that the exit code does not
// depend on whether the guard retried.
var (
	firstAttempts = [][]string{
		{"result"},
		{"chunk", "result"},
		{"thought", "chunk", "result"},
		{"error:transient"},
		{"error:transient"},
		{"chunk", "error:transient"},
		{"thought", "error:transient"},
		{"tool", "error:transient"},
		{"ask", "error:transient"},
		{"error:transient", "late"},
		{"error:hard"},
		{"error:badutf8"},
		{"chunk", "result", "dup"},
		{"error:transient", "dup"},
		{"stray", "result"},
		{"strayproxy", "chunk", "result"},
		{"chunk", "result", "late"},
		{"garbage", "result"},
		{"garbage", "error:transient"},
		{"hugenote", "result"},
		{"hugeanswer"},
		{"chunk", "ask", "chunk", "result"},
		{"stall"},
		{"chunk", "stall"},
	}
	terminalAttempts = [][]string{
		{"chunk", "exit:3"},
		{"exit:0"},
		{"cut:2"},
		{"chunk", "cut:0"},
		{"thought", "kill"},
		{"error:transient", "exit:1"},
	}
	retryAttempts = [][]string{
		{"result"},
		{"chunk", "result"},
		{"error:transient"},
		{"error:transient", "dup"},
		{"chunk", "error:transient"},
		{"result", "late"},
		{"hugeanswer"},
		{"stray", "result"},
	}
)

var faultSignals = []string{"SIGTERM", "SIGINT", "SIGHUP"}

func signalByName(name string) platform.Signal {
	switch name {
	case "SIGINT":
		return platform.SIGINT
	case "SIGHUP":
		return platform.SIGHUP
	}
	return platform.SIGTERM
}

// drawScenario draws run's scenario from seed.
func drawScenario(seed uint64, run int) faultScenario {
	r := rand.New(rand.NewPCG(seed, uint64(run)))
	chance := func(p float64) bool { return r.Float64() < p }
	sc := faultScenario{Seed: seed, Run: run, SignalMid: -1}
	if chance(0.12) {
		u := r.Float64()
		sc.Early, sc.EarlyMs, sc.Signal = true, u*u*u*200, "SIGTERM" // most early
		return sc
	}
	sc.Agent.IgnoreEOF = chance(0.08)
	sc.Agent.IgnoreTerm = chance(0.08)
	sc.Agent.InitTwice = chance(0.1)
	sc.Agent.InitStray = chance(0.1)
	n := r.IntN(4)
	terminal := -1
	if n > 0 && chance(0.25) {
		terminal = r.IntN(n)
		n = terminal + 1 // nothing is sent after the agent is gone
	}
	for i := range n {
		var attempts [][]string
		if i == terminal {
			attempts = append(attempts, terminalAttempts[r.IntN(len(terminalAttempts))])
		} else {
			attempts = append(attempts, firstAttempts[r.IntN(len(firstAttempts))])
		}
		for range 2 {
			attempts = append(attempts, retryAttempts[r.IntN(len(retryAttempts))])
		}
		sc.Agent.Prompts = append(sc.Agent.Prompts, attempts)
		t := clientTurn{CancelAfter: -1}
		if before, ok := framesBeforeStall(attempts[0]); ok {
			t.CancelAfter = r.IntN(before + 1) // a frame that never comes must not be waited for
		} else if chance(0.15) {
			t.CancelAfter = r.IntN(3)
		}
		sc.Prompts = append(sc.Prompts, t)
	}
	if chance(0.25) {
		sc.Signal = faultSignals[r.IntN(len(faultSignals))]
		sc.SignalAt = r.IntN(n + 1)
		if terminal >= 0 && sc.SignalAt > terminal {
			sc.SignalAt = terminal // before the agent ends itself
		}
		if sc.SignalAt < n && sc.SignalAt != terminal && chance(0.5) {
			sc.SignalMid = r.IntN(3)
		}
	}
	sc.SlowRead = chance(0.3)
	sc.DupAnswers = chance(0.3)
	sc.StrayAnswer = chance(0.2)
	sc.Oversize = chance(0.15)
	sc.Garbage = chance(0.15)
	sc.CutAtEnd = chance(0.15)
	sc.CloseEarly = sc.Signal == "" && n > 0 && chance(0.1)
	return sc
}

// framesBeforeStall counts the frames an attempt that stalls sends the
// client before it stalls; ok is false when it does not stall.
func framesBeforeStall(actions []string) (n int, ok bool) {
	for _, a := range actions {
		switch a {
		case "stall":
			return n, true
		case "chunk", "thought", "tool", "late", "garbage", "ask":
			n++
		}
	}
	return 0, false
}

// expectedExit is the exit code acp-guard must end with.
func (sc faultScenario) expectedExit() int {
	if sc.Signal != "" {
		sig := signalByName(sc.Signal)
		if sig == platform.SIGTERM && sc.Agent.IgnoreTerm {
			return 128 + int(platform.SIGKILL) // forwarded, ignored, killed after the grace period
		}
		return 128 + int(sig)
	}
	for _, p := range sc.Agent.Prompts {
		for _, act := range p[0] {
			name, arg, _ := cutAction(act)
			switch name {
			case "exit", "cut":
				return arg
			case "kill":
				return 128 + int(platform.SIGKILL)
			}
		}
	}
	// The client closed its input: the agent exits 0, or is ended by the
	// grace signals — a clean session either way.
	return 0
}

func cutAction(act string) (string, int, bool) {
	for i := range act {
		if act[i] == ':' {
			n, err := strconv.Atoi(act[i+1:])
			return act[:i], n, err == nil
		}
	}
	return act, 0, false
}
