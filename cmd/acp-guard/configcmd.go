package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/acp-guard/acp-guard/policy"
)

func init() { subcommands = append(subcommands, newConfigCmd) }

// newConfigCmd is `acp-guard config`: the effective proxy configuration
// and where each value came from.
func newConfigCmd(s *streams) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "config [proxy flags]",
		Short: "Print the effective configuration and where each value came from",
		Long: `config prints every proxy setting with its effective value and its source:
a flag (given to config itself, as you would give it to the proxy), an
ACP_GUARD_* environment variable, the config file, or the default.
Precedence: flag > environment > config file > default.

The config file is $XDG_CONFIG_HOME/acp-guard/config.json (default
~/.config/acp-guard/config.json; ACP_GUARD_CONFIG names another), a JSON
object keyed by flag name, e.g.

  {"policy": "~/.config/acp-guard/policy.json", "log-level": "info",
   "record": "~/acp-runs/{time}-{pid}.jsonl", "fallback-models": ["model-b"]}

Paths have a leading ~ and $VAR expanded. Settings --help does not show
(jitter-seed: a fixed seed for the retry jitter, for tests and replays) are
listed too, and marked as hidden flags.`,
		Example: "  acp-guard config\n  ACP_GUARD_LOG_LEVEL=debug acp-guard config --policy p.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			settings, err := applyConfig(cmd.Flags(), nil)
			if err != nil {
				return withCode(exitUsage, err)
			}
			path, _ := configFilePath()
			state := "not present"
			if _, err := os.Stat(path); err == nil {
				state = "read"
			}
			fmt.Fprintf(s.out, "config file: %s (%s)\n\n", path, state)
			tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SETTING\tVALUE\tFROM")
			for _, st := range settings {
				if st.Name == "state-dir" && st.Value == "" {
					if d, err := policy.DefaultStateDir(); err == nil {
						st.Value = d
					}
				}
				from := st.From
				if f := cmd.Flags().Lookup(st.Name); f != nil && f.Hidden {
					// Every setting is listed; a hidden one says why
					// --help does not show it.
					from += " (a hidden flag, for tests and replays: not in --help)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", st.Name, cell(st.Value), from)
			}
			return tw.Flush()
		},
	}
	bindRunFlags(cmd.Flags(), o)
	return cmd
}
