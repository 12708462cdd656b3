//go:build linux

package platform

const watchdogAvailable = true

func setWatchdog(on bool) { useWatchdog = on }
