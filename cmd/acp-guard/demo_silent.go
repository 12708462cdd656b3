package main

import "time"

// The silent-failure part of the demo tour (docs/WIRE.md, "A silent failure").
func init() {
	demoTour = append(demoTour,
		demoStep{"An empty answer: end_turn with nothing in it — flagged, passed", "silent-empty", nil, false},
		demoStep{"A broken stream reported as complete: zero output tokens — flagged", "silent-truncated", nil, false},
		demoStep{"The agent's own retry re-streamed the answer — flagged", "silent-repeated", nil, false},
		demoStep{"An agent that stops talking — with --stall-timeout 1s", "stall-after-text", nil, false},
	)
}

// demoStall is the stall timeout a tour step runs with.
var demoStall = map[string]time.Duration{"stall-after-text": time.Second}
