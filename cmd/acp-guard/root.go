package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// streams are the process's standard streams, injected for tests.
type streams struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

// codeError carries an exit code out of a command's RunE.
type codeError struct {
	code exitCode
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

// withCode wraps err so that run exits with code.
func withCode(code exitCode, err error) error {
	if err == nil {
		return &codeError{code: code, err: errSilent}
	}
	return &codeError{code: code, err: err}
}

// errSilent is an error whose message was already printed.
var errSilent = errors.New("")

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s := &streams{in: stdin, out: stdout, err: stderr}
	root := newRootCmd(s)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return int(exitOK)
	}
	var ce *codeError
	if errors.As(err, &ce) {
		if ce.err != errSilent && ce.err.Error() != "" {
			fmt.Fprintf(stderr, "acp-guard: %v\n", ce.err)
		}
		return int(ce.code)
	}
	fmt.Fprintf(stderr, "acp-guard: %v\n", err)
	return int(exitUsage)
}

func newRootCmd(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "acp-guard [flags] [--] AGENT [ARGS...]",
		Short: "A sidecar proxy that guards ACP agents against provider failures",
		Long: `acp-guard starts AGENT, relays ACP (JSON-RPC over stdio) between the client
and the agent, classifies provider failures and recovers from them by policy.

Everything from AGENT on belongs to the agent. Without "--", a first word that
is a subcommand runs the subcommand; a first word that is not, is the agent —
unless no such executable exists and the word is a near-miss of a
subcommand ("acp-guard polcy"), which is refused with a suggestion (exit 2).
After "--" the first word is always the agent.`,
		Example: `  acp-guard -- cursor-agent acp
  acp-guard --policy ~/.config/acp-guard/policy.json -- npx @zed-industries/codex-acp
  acp-guard --record 'runs/{time}-{pid}.jsonl' -- gemini --acp
  ACP_GUARD_POLICY=ci-policy.json acp-guard -- codex-acp`,
		Version:           versionString(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		PersistentPreRunE: releaseSignals,
	}
	root.SetVersionTemplate(versionLine())
	attachProxy(root, s)
	// Subcommands register here; each lives in its own file.
	for _, add := range subcommands {
		root.AddCommand(add(s))
	}
	requireSubcommands(root)
	addExamples(root)
	return root
}

// subcommands is appended to by each command file's init function, so that
// command files stay independent of each other.
var subcommands []func(*streams) *cobra.Command
