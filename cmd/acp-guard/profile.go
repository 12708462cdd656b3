//go:build pprof

package main

import (
	"log/slog"
	"os"
	"runtime/pprof"

	"github.com/acp-guard/acp-guard/internal/safefile"
)

// startProfiles starts the profiles the environment asks for, in a build
// with -tags pprof (docs/PERFORMANCE.md): ACP_GUARD_CPUPROFILE, the CPU
// profile of the whole session; ACP_GUARD_MEMPROFILE, the heap at the end
// of the session with what was allocated since start
// (GODEBUG=memprofilerate=1 records every allocation, package inits
// included). The returned func (nil: none asked for) writes and closes
// them.
func startProfiles(log *slog.Logger) func() {
	var stops []func()
	if path := os.Getenv("ACP_GUARD_CPUPROFILE"); path != "" {
		if f, err := safefile.Open(path, safefile.Truncate); err != nil {
			log.Warn("cpu profile not written", "error", err)
		} else if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			log.Warn("cpu profile not written", "error", err)
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	if path := os.Getenv("ACP_GUARD_MEMPROFILE"); path != "" {
		stops = append(stops, func() {
			f, err := safefile.Open(path, safefile.Truncate)
			if err != nil {
				return
			}
			defer f.Close()
			_ = pprof.Lookup("heap").WriteTo(f, 0)
		})
	}
	if len(stops) == 0 {
		return nil
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}
