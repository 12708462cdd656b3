package main

import (
	"errors"
	"fmt"
	"strings"

	acpguard "github.com/acp-guard/acp-guard"
)

// configFlags names the flag of each acpguard.Config field a
// *acpguard.ConfigError can be about (its Field): the library names its
// fields, the command line its flags (TestConfigFlags keeps both real).
var configFlags = map[string]string{
	"PolicyFile":       "--policy",
	"CatalogueFile":    "--catalogue",
	"CatalogueOverlay": "--catalogue-overlay",
	"Notices":          "--notices",
	"StallTimeout":     "--stall-timeout",
	"StateDir":         "--state-dir",
	"Circuits":         "--circuits",
	"CircuitNamespace": "--circuit-namespace",
	"Record":           "--record",
	"MaxLine":          "--max-line",
	"Grace":            "--grace",
}

// configFlagError is err as the command line says it: a configuration error
// names the flag at fault instead of the Config field ("--notices: …");
// any other error is itself.
func configFlagError(err error) error {
	var ce *acpguard.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	name, ok := configFlags[ce.Field]
	if !ok {
		return ce.Err
	}
	if ce.Value != "" {
		name += " " + ce.Value
	}
	sep := ": "
	if strings.HasPrefix(ce.Err.Error(), "\n") {
		sep = ":"
	}
	return fmt.Errorf("%s%s%w", name, sep, ce.Err)
}
