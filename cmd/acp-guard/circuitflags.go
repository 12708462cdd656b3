package main

import "github.com/spf13/pflag"

// circuitOptions select the shared circuits' store (docs/CIRCUITS.md).
type circuitOptions struct {
	store     string // file | memory | off | nats://… ("" = $ACP_GUARD_CIRCUITS, else file)
	namespace string
}

func bindCircuitFlags(fs *pflag.FlagSet, o *circuitOptions) {
	fs.StringVar(&o.store, "circuits", "", "where the circuits shared with other acp-guard processes live: file (the state directory, default), memory (this process only), off, or nats://HOST:PORT (a NATS JetStream key-value bucket)")
	fs.StringVar(&o.namespace, "circuit-namespace", "", "separates circuits of tenants/accounts sharing one store (A-Z a-z 0-9 - _; default \"default\")")
}
