package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Stamped at build time with -ldflags "-X main.version=… -X main.commit=…
// -X main.date=…": make build and the release build (.goreleaser.yaml) do,
// from one version string (scripts/version.sh). date is the commit's
// time, not the build's, so that a build from the same inputs gives the
// same bytes. Empty when not stamped (go install, go build): then the
// module version and the VCS facts go build recorded are used.
var (
	version = ""
	commit  = ""
	date    = ""
)

// buildFacts is the version, commit and commit time the binary carries:
// the stamped ones, else what debug.ReadBuildInfo knows.
func buildFacts() (v, rev, when string) {
	v, rev, when = version, commit, date
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if v == "" {
			v = "unknown"
		}
		return v, rev, when
	}
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if rev == "" {
				rev = s.Value
			}
		case "vcs.time":
			if when == "" {
				when = s.Value
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if v != "" {
		return v, rev, when
	}
	v = strings.TrimPrefix(bi.Main.Version, "v")
	if v == "" || v == "(devel)" {
		v = "devel"
		if rev != "" {
			v += "-" + rev[:min(len(rev), 12)]
			if modified {
				v += "-dirty"
			}
		}
	}
	return v, rev, when
}

// versionString is the version alone: what the session's records and
// telemetry carry.
func versionString() string {
	v, _, _ := buildFacts()
	return v
}

// versionLine is what --version and `acp-guard version` print:
// "acp-guard 1.2.3 (commit 0123abc…, 2026-12-02T06:09:00Z, go1.26.8 linux/amd64)".
func versionLine() string {
	v, rev, when := buildFacts()
	var facts []string
	if rev != "" {
		facts = append(facts, "commit "+rev)
	}
	if when != "" {
		facts = append(facts, when)
	}
	facts = append(facts, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return fmt.Sprintf("acp-guard %s (%s)\n", v, strings.Join(facts, ", "))
}

func init() { subcommands = append(subcommands, newVersionCmd) }

func newVersionCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print acp-guard's version",
		Args:    cobra.NoArgs,
		Example: "  acp-guard version\n  acp-guard --version",
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(s.out, versionLine())
			return err
		},
	}
}
