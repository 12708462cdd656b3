package main

import (
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/acp-guard/acp-guard/transport"
)

// guardOptions configure observation, classification and recovery.
type guardOptions struct {
	adapter string
}

func bindGuardFlags(fs *pflag.FlagSet, o *guardOptions) {
	fs.StringVar(&o.adapter, "adapter", "", "which agent is behind the proxy (default: from initialize's agentInfo.name, else the command's basename)")
}

// guardWiring is what runProxy plugs into the relay.
type guardWiring struct {
	hooks  transport.Hooks
	tap    transport.Tap
	redact func(string) string
}

func newGuard(o *runOptions, log *slog.Logger) (*guardWiring, error) {
	return &guardWiring{}, nil
}

func (g *guardWiring) close() {}
