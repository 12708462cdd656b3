package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	acpguard "github.com/acp-guard/acp-guard"
)

// TestConfigFlags: every field a configuration error names is a field of
// acpguard.Config with a flag of the command, and the error reads as the
// command line spells it.
func TestConfigFlags(t *testing.T) {
	root := newRootCmd(&streams{})
	cfg := reflect.TypeFor[acpguard.Config]()
	for field, flag := range configFlags {
		if _, ok := cfg.FieldByName(field); !ok {
			t.Errorf("configFlags names %s, which is not a field of acpguard.Config", field)
		}
		if root.Flags().Lookup(strings.TrimPrefix(flag, "--")) == nil && root.PersistentFlags().Lookup(strings.TrimPrefix(flag, "--")) == nil {
			t.Errorf("configFlags names %s for %s, which is not a flag of acp-guard", flag, field)
		}
	}
	_, err := acpguard.Config{Notices: "shout"}.Load()
	var ce *acpguard.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Notices" || strings.Contains(err.Error(), "--") {
		t.Fatalf("Load: %v; want a ConfigError about Notices that names no flag", err)
	}
	if got := configFlagError(err).Error(); !strings.HasPrefix(got, `--notices: "shout"`) {
		t.Errorf("configFlagError: %q, want it to start --notices", got)
	}
	_, err = acpguard.Config{PolicyFile: "/nonexistent/p.json", StateDir: t.TempDir()}.Load()
	if got := configFlagError(err).Error(); !strings.HasPrefix(got, "--policy: ") {
		t.Errorf("configFlagError: %q, want it to start --policy", got)
	}
	if plain := errors.New("x"); configFlagError(plain) != plain {
		t.Error("configFlagError changed an error that is not a ConfigError")
	}
}
