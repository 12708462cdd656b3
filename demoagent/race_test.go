//go:build race

package demoagent

// raceEnabled skips tests whose cost under the race detector is all in
// encoding/json scanning tens of megabytes.
const raceEnabled = true
