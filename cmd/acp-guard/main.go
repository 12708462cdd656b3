// Command acp-guard is a sidecar proxy for the Agent Client Protocol.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/acp-guard/acp-guard/cmd/acp-guard/internal/stopsig"
	"github.com/acp-guard/acp-guard/internal/platform"
)

// Stop signals are caught before main runs (internal/stopsig, signals.go):
// a proxy session takes them, any other command gives them back, and one
// that arrived while nobody had claimed them decides the exit code.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), platform.SIGPIPE)
	defer stop()
	os.Exit(stopsig.ExitCode(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)))
}
