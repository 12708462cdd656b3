package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/acp-guard/acp-guard/policy"
)

// maxPolicyBytes bounds a policy document read by `policy check`.
const maxPolicyBytes = 1 << 20

// policyCheckOptions are the arguments of `acp-guard policy check`.
type policyCheckOptions struct {
	file string // "-" reads stdin
	json bool   // print the normalized document instead of the schedule

	in       io.Reader
	out, err io.Writer
}

func init() { subcommands = append(subcommands, newPolicyCmd) }

func newPolicyCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Validate recovery policy documents and show their schedule",
		Long: `A policy document says, per error class (transient, hard), whether
acp-guard retries a failed turn (and with which delays), waits for a trusted
reset time, and what happens when recovery is exhausted (skip to the next
fallback model, or stop). See "acp-guard policy default" for the shape.`,
	}
	cmd.AddCommand(newPolicyCheckCmd(s), newPolicyDefaultCmd(s))
	return cmd
}

// policyHelpDoc is the document whose schedule `policy check --help`
// shows (TestPolicyCheckHelpIsTrue checks that it prints that).
const policyHelpDoc = `{"transient":{"retry":{"max_retries":3,"initial_interval_seconds":5},"wait_for_reset":{"max_wait_seconds":300}},"hard":{"on_exhausted":"stop"}}`

func newPolicyCheckCmd(s *streams) *cobra.Command {
	o := &policyCheckOptions{}
	cmd := &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a policy document and print the schedule it implies",
		Long: `check validates FILE ("-" for stdin) and prints, per class, the schedule
the document implies, then the normalized document (omitted parts filled in
with their defaults: immediate skip, retry and reset waiting disabled). For
` + policyHelpDoc + ` it prints

  transient: retry after up to 5s, 10s, 20s, then skip; wait for a trusted reset up to 5m0s (once)
  hard: stop immediately

"Up to": each delay is drawn with full jitter, from 0 to the doubling
backoff, and never comes before a provider's retry-after or reset (nor,
with shared circuits, before their least cooldown of 1s).

Legacy rules ("retry_same", "try_next", "stop") are accepted and normalized.
An invalid document is reported one problem per line, each naming its field,
and check exits with status 1.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file = args[0]
			o.in, o.out, o.err = s.in, s.out, s.err
			return runPolicyCheck(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print only the normalized document")
	cmd.Example = "  acp-guard policy check ~/.config/acp-guard/policy.json\n  echo '{\"transient\":{\"retry\":{\"max_retries\":3,\"initial_interval_seconds\":5}}}' | acp-guard policy check -"
	return cmd
}

func runPolicyCheck(_ context.Context, o *policyCheckOptions) error {
	data, err := readPolicyFile(o.file, o.in)
	if err != nil {
		return withCode(exitFailure, err)
	}
	doc, err := policy.Parse(data)
	if err != nil {
		var verr *policy.ValidationError
		if !errors.As(err, &verr) {
			return withCode(exitFailure, fmt.Errorf("%s: %w", o.file, err))
		}
		for _, fe := range verr.Errors {
			fmt.Fprintf(o.err, "%s: %v\n", o.file, fe)
		}
		return withCode(exitFailure, nil)
	}
	if o.json {
		_, err = o.out.Write(doc.Normalized())
		return err
	}
	// The schedule, then the document with every omitted part filled in
	// with its default, so a reader sees what the file really means.
	_, err = fmt.Fprintf(o.out, "%s\nnormalized document:\n%s", doc.Describe(), doc.Normalized())
	return err
}

// readPolicyFile reads a policy document from a file, or stdin for "-",
// refusing documents larger than maxPolicyBytes.
func readPolicyFile(name string, stdin io.Reader) ([]byte, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxPolicyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > maxPolicyBytes {
		return nil, fmt.Errorf("%s: policy document larger than %d bytes", name, maxPolicyBytes)
	}
	return data, nil
}

func newPolicyDefaultCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:   "default",
		Short: "Print the default policy document (immediate skip for both classes)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := s.out.Write(policy.Default().Normalized())
			return err
		},
	}
}
