//go:build !linux

package platform

// macOS always uses the watchdog (TestAgentDiesWhenGuardIsKilled tests
// it); Windows has its job object instead.
const watchdogAvailable = false

func setWatchdog(bool) {}
