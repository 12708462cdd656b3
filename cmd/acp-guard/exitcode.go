package main

// exitCode is the one place where acp-guard's own exit codes are defined.
// When an agent ran, acp-guard exits with the agent's code instead
// (128+signal when it was killed).
type exitCode int

const (
	exitOK         exitCode = 0
	exitFailure    exitCode = 1   // a command failed (bad input, failed check)
	exitUsage      exitCode = 2   // bad flags or arguments
	exitNotExec    exitCode = 126 // the agent exists but cannot be executed
	exitNotFound   exitCode = 127 // the agent was not found
	exitSignalBase exitCode = 128 // 128+N: terminated by signal N
)
