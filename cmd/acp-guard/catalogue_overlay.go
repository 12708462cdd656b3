package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/classify"
)

// catalogueFieldCmds are the field loop's commands under `catalogue`:
// unknowns (catalogue_unknowns.go) and publish.
func catalogueFieldCmds(s *streams) []*cobra.Command {
	return []*cobra.Command{newCatalogueUnknownsCmd(s), newCataloguePublishCmd(s)}
}

// overlayEngine merges the overlay in file over the catalogue o names and
// compiles the result without requiring its fixtures to pass (test
// reports them); the findings are the merged catalogue's lint.
func overlayEngine(o *catalogueOptions, file string) (*classify.Engine, []classify.Finding, error) {
	base, err := catalogueData(o)
	if err != nil {
		return nil, nil, withCode(exitFailure, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, withCode(exitFailure, err)
	}
	m, err := catalogue.Merge(base, b)
	if err != nil {
		return nil, nil, withCode(exitFailure, fmt.Errorf("%s: %w", file, err))
	}
	findings := classify.Lint(m.Catalogue)
	e, err := classify.CompileRules(m.Catalogue)
	if err != nil {
		return nil, nil, withCode(exitFailure, fmt.Errorf("%s: %w", file, err))
	}
	for _, r := range m.Overlay.Rules {
		if errs := classify.CheckRule(r); len(errs) > 0 {
			return nil, nil, withCode(exitFailure, fmt.Errorf("%s: %v", file, errs))
		}
	}
	return e, findings, nil
}

// publishOptions are the flags of `acp-guard catalogue publish`.
type publishOptions struct {
	store     circuitOptions
	stateDir  string
	clear     bool
	out, err  io.Writer
	overlayIn string
}

func newCataloguePublishCmd(s *streams) *cobra.Command {
	o := &publishOptions{}
	cmd := &cobra.Command{
		Use:   "publish FILE | --clear",
		Short: "Publish a catalogue overlay to the circuits' store, for every session started with --catalogue-overlay store",
		Long: `publish validates the overlay FILE over the embedded catalogue (it must compile,
its fixtures pass, and the embedded fixtures it does not override still pass)
and writes it to the configured store (--circuits, else $ACP_GUARD_CIRCUITS, else
the file in the state directory; a NATS server shares it with a fleet), under
the circuit namespace. Sessions started with --catalogue-overlay store pick it
up between turns and report catalogueVersion embedded+overlay. --clear
publishes the embedded catalogue alone.`,
		Example: `  acp-guard catalogue test overlay.json
  acp-guard catalogue publish overlay.json --circuits nats://10.0.0.5:4222
  acp-guard catalogue publish --clear`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.clear == (len(args) == 1) && len(args) <= 1 {
				return fmt.Errorf("want an overlay FILE or --clear")
			}
			return cobra.MaximumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.out, o.err = s.out, s.err
			if _, err := applyConfig(cmd.Flags(), map[string]bool{"circuits": true, "circuit-namespace": true, "state-dir": true}); err != nil {
				return withCode(exitUsage, err)
			}
			if len(args) == 1 {
				o.overlayIn = args[0]
			}
			return runCataloguePublish(cmd.Context(), o)
		},
	}
	flags := cmd.Flags()
	bindCircuitFlags(flags, &o.store)
	flags.StringVar(&o.stateDir, "state-dir", "", "state directory holding the file store (default: $XDG_STATE_HOME/acp-guard)")
	flags.BoolVar(&o.clear, "clear", false, "publish the embedded catalogue alone (no overlay)")
	return cmd
}

func runCataloguePublish(ctx context.Context, o *publishOptions) error {
	var doc []byte
	if o.overlayIn != "" {
		b, err := os.ReadFile(o.overlayIn)
		if err != nil {
			return withCode(exitFailure, err)
		}
		doc = b
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := acpguard.PublishCatalogueOverlay(ctx, o.store.store, o.stateDir, o.store.namespace, doc)
	if err != nil {
		if o.overlayIn != "" {
			err = fmt.Errorf("%s: %w", o.overlayIn, err)
		}
		return withCode(exitFailure, err)
	}
	what := "published"
	if doc == nil {
		what = "cleared; sessions go back to"
	}
	fmt.Fprintf(o.out, "catalogue overlay %s: catalogue %s\n", what, v)
	return nil
}
