package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/acp-guard/acp-guard/cmd/acp-guard/internal/stopsig"
)

// Stop signals (SIGINT, SIGTERM, SIGHUP) are caught from the process's
// first instructions by internal/stopsig and held until a command claims
// them: the proxy takes them (proxySignals), every other command releases
// them (releaseSignals) so they end it as if they had never been caught.

// releaseSignals is the root's PersistentPreRunE: a command that is not
// the proxy gives the stop signals back their own disposition.
func releaseSignals(cmd *cobra.Command, args []string) error {
	proxy := cmd == cmd.Root() && len(args) > 0 || cmd.Name() == "run" && cmd.Parent() == cmd.Root()
	if !proxy {
		stopsig.Release()
	}
	return nil
}

// proxySignals gives the proxy the stop signals caught since the process
// started — a signal that came during startup is on the channel already —
// and reports whether one arrived. When they were released (an in-process
// session: tests, the demo) it subscribes anew. stop ends the
// subscription once the session is over.
func proxySignals() (sigs <-chan os.Signal, external interface{ Load() bool }, stop func()) {
	if ch, release, ok := stopsig.Take(); ok {
		return ch, arrivedFlag{}, release
	}
	ch, flag, stopNotify := notifySignals()
	return ch, flag, stopNotify
}

type arrivedFlag struct{}

func (arrivedFlag) Load() bool { return stopsig.Arrived() }
