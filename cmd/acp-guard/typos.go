package main

import (
	"fmt"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"
)

// The rule for a first word that is not a subcommand (documented in the
// root's help and the README):
//
//   - after "--" it is always the agent;
//   - without "--" it is the agent when it names an executable (on PATH,
//     or a path), as `acp-guard codex-acp` always worked;
//   - otherwise, when it is a near-miss of a subcommand (edit distance ≤ 2,
//     or a prefix), it is a typo: exit 2 with "did you mean …";
//   - otherwise it is the agent, which then is not found (127, with a
//     JSON-RPC error answering the client's initialize).

// suggestions returns cmd's subcommands that word is a near-miss of.
func suggestions(cmd *cobra.Command, word string) []string {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	return cmd.SuggestionsFor(word)
}

// unknownCommand is the usage error for word under cmd.
func unknownCommand(cmd *cobra.Command, word string, agentHint bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown command %q for %q", word, cmd.CommandPath())
	if s := suggestions(cmd, word); len(s) > 0 {
		fmt.Fprintf(&b, "\n\nDid you mean this?\n\t%s\n", strings.Join(s, "\n\t"))
	}
	if agentHint {
		fmt.Fprintf(&b, "\nNo agent called %q was found on PATH either; to start one anyway: acp-guard -- %s", word, word)
	}
	fmt.Fprintf(&b, "\nRun '%s --help' for usage.", cmd.CommandPath())
	return withCode(exitUsage, fmt.Errorf("%s", b.String()))
}

// checkFirstWord applies the rule above to the root's first argument.
func checkFirstWord(root *cobra.Command, args []string) error {
	if root.ArgsLenAtDash() >= 0 || len(args) == 0 {
		return nil
	}
	word := args[0]
	if strings.ContainsRune(word, '/') {
		return nil
	}
	if _, err := exec.LookPath(word); err == nil {
		return nil
	}
	if len(suggestions(root, word)) == 0 {
		return nil
	}
	return unknownCommand(root, word, true)
}

// requireSubcommands makes every command that only groups others (policy,
// catalogue, …) refuse an unknown or mistyped subcommand with exit 2,
// instead of printing help and exiting 0; with no argument it prints help.
func requireSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		requireSubcommands(c)
	}
	if cmd.HasParent() && cmd.HasSubCommands() && !cmd.Runnable() {
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			return unknownCommand(c, args[0], false)
		}
	}
}
