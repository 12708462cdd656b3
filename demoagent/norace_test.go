//go:build !race

package demoagent

const raceEnabled = false
