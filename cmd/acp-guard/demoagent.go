package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/acp-guard/acp-guard/demoagent"
)

func init() { subcommands = append(subcommands, newDemoAgentCmd) }

// demoAgentOptions are the demo-agent command's flags.
type demoAgentOptions struct {
	streams *streams
	list    bool
	agent   demoagent.Options
}

func newDemoAgentCmd(s *streams) *cobra.Command {
	opts := &demoAgentOptions{streams: s}
	o := &opts.agent
	cmd := &cobra.Command{
		Use:   "demo-agent [--scenario NAME] [flags]",
		Short: "Run a scripted ACP agent on stdio (the test double; --list shows scenarios)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemoAgent(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.list, "list", false, "list the scenarios and exit")
	f.StringVar(&o.Scenario, "scenario", "success", "script to run (see --list)")
	f.StringVar(&o.AgentName, "agent-name", "", "agentInfo.name to report (default: the scenario's, else demo-agent)")
	f.IntVar(&o.Count, "count", 0, fmt.Sprintf("stream: notifications per prompt (default %d); stderr-flood: lines (default %d)", demoagent.DefaultStreamCount, demoagent.DefaultFloodCount))
	f.IntVar(&o.Count, "chunks", 0, "alias of --count")
	f.IntVar(&o.Size, "size", 0, fmt.Sprintf("stream: bytes per frame (default %d); huge-line: frame bytes (default %d)", demoagent.DefaultStreamSize, demoagent.DefaultHugeSize))
	f.StringVar(&o.Text, "text", "", "cursor-*: control chunk text; error-line, retry-notes: the line (each note: one --text per run)")
	f.IntVar(&o.Fail, "fail", demoagent.DefaultFail, "fail-then-succeed: prompts that fail first")
	f.StringVar(&o.Error, "error", "", "fail-then-succeed, fail-model, text-then-fail: error kind (default: transient for the adapter), one of "+fmt.Sprint(demoagent.ErrorKinds()))
	f.StringVar(&o.BadModel, "bad-model", demoagent.DefaultBadModel, "fail-model: the model that fails")
	f.IntVar(&o.ExitCode, "exit-code", demoagent.DefaultExitCode, "crash: exit code")
	f.DurationVar(&o.ResetIn, "reset-in", demoagent.DefaultResetIn, "quota-reset: reset time from now")
	f.DurationVar(&o.Delay, "delay", 0, "pause between the chunks of a turn")
	f.BoolVar(&o.IgnoreCancel, "ignore-cancel", false, "hang: ignore session/cancel")
	f.StringSliceVar(&o.Grandchild, "grandchild", nil, "grandchild: command and arguments to start (default sleep,300)")
	return cmd
}

func runDemoAgent(ctx context.Context, opts *demoAgentOptions) error {
	s := opts.streams
	if opts.list {
		tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
		for _, sc := range demoagent.Scenarios() {
			fmt.Fprintf(tw, "%s\t%s\n", sc.Name, sc.Description)
		}
		return tw.Flush()
	}
	if opts.agent.Fail == 0 {
		opts.agent.Fail = -1 // an explicit --fail 0: no failures
	}
	opts.agent.Now = time.Now
	err := demoagent.Run(ctx, opts.agent, s.in, s.out, s.err)
	var exit *demoagent.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit):
		if exit.Signal != 0 {
			exit.Exit() // does not return
		}
		return withCode(exitCode(exit.Code), nil)
	case errors.Is(err, context.Canceled):
		return nil
	}
	return withCode(exitFailure, err)
}
