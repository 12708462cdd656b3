package event

import "github.com/acp-guard/acp-guard/internal/platform"

// ExitStatus describes how the agent ended.
type ExitStatus struct {
	Code     int    // exit code; 128+N when killed by signal N
	Signal   string // e.g. "killed", "terminated" — empty when it exited
	StartErr error  // the agent could not be started
	// Stopped: acp-guard was told to stop, by this signal, before it
	// started the agent; the agent never ran (Code is 128+N).
	Stopped platform.Signal
	// OutputClosed: the agent closed its stdout while still running. It
	// can answer nothing more; it is terminated after the grace period,
	// and Code and Signal are not known yet (Code is -1).
	OutputClosed bool
}
