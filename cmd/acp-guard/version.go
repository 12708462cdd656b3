package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is acp-guard's version, stamped at build time with
// -ldflags "-X main.version=…" (make build does); empty otherwise.
var version = ""

// versionString is the stamped version, else the module version and the
// VCS revision the binary was built from (go build records both).
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && v == "devel" {
		return "devel-" + rev + modified
	}
	return v
}

// versionLine is what --version and `acp-guard version` print.
func versionLine() string {
	return fmt.Sprintf("acp-guard %s (%s %s/%s)\n", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
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
