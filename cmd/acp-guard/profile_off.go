//go:build !pprof

package main

import (
	"log/slog"
	"os"
)

// startProfiles: this build has no profiler (runtime/pprof is about
// 200 KB of binary); asking for a profile is a warning naming the tag.
func startProfiles(log *slog.Logger) func() {
	for _, name := range []string{"ACP_GUARD_CPUPROFILE", "ACP_GUARD_MEMPROFILE"} {
		if os.Getenv(name) != "" {
			log.Warn("profile not written: this acp-guard is built without -tags pprof", "name", name)
		}
	}
	return nil
}
