package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/policy"
)

// circuitOptions select the shared circuits' store (DESIGN.md, "CLI and
// configuration"; README "Shared circuits").
type circuitOptions struct {
	store     string // file | off | nats://… ("" = $ACP_GUARD_CIRCUITS, else file)
	namespace string
}

func bindCircuitFlags(fs *pflag.FlagSet, o *circuitOptions) {
	fs.StringVar(&o.store, "circuits", "", "where the circuits shared with other acp-guard processes live: file (the state directory, default), off, or nats://HOST:PORT (a NATS JetStream key-value bucket)")
	fs.StringVar(&o.namespace, "circuit-namespace", "", "separates circuits of tenants/accounts sharing one store (A-Z a-z 0-9 - _; default \"default\")")
}

// openCircuits returns the circuit layer for a proxy whose policy can
// recover (nil otherwise, or for --circuits off) and a closer for its
// store. A bad --circuits or --circuit-namespace value is an error; a
// store that cannot be opened is logged and the proxy runs without
// circuits (a turn never depends on the store).
func openCircuits(o circuitOptions, stateDir string, recovering bool, log *slog.Logger) (*circuit.Circuits, func() error, error) {
	spec := strings.TrimSpace(o.store) // the flag, else ACP_GUARD_CIRCUITS, else the config file (config.go)
	switch {
	case spec == "", spec == "off", spec == "file", strings.HasPrefix(spec, "nats://"), strings.HasPrefix(spec, "tls://"):
	default:
		_, err := circuit.OpenStore(spec, "", circuit.NATSOptions{}) // names the value, password redacted
		return nil, nil, fmt.Errorf("--%w", err)
	}
	if o.namespace != "" {
		if _, err := (circuit.Key{Namespace: o.namespace, Provider: "x", Scope: "x"}).Normalize(); err != nil {
			return nil, nil, fmt.Errorf("--circuit-namespace: %w", err)
		}
	}
	if !recovering || spec == "off" {
		return nil, nil, nil
	}
	if (spec == "" || spec == "file") && stateDir == "" {
		d, err := policy.DefaultStateDir()
		if err != nil {
			log.Warn("circuits off: no state directory", "err", err)
			return nil, nil, nil
		}
		stateDir = d
	}
	st, err := circuit.OpenStore(spec, stateDir, circuit.NATSOptions{Name: "acp-guard " + version})
	if err != nil {
		log.Warn("circuits off: store unavailable", "err", err)
		return nil, nil, nil
	}
	return circuit.New(circuit.Config{Store: st, Logger: log}), st.Close, nil
}
