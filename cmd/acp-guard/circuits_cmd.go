package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/policy"
)

// circuitsCmdOptions are the flags of `acp-guard circuits`.
type circuitsCmdOptions struct {
	store    circuitOptions
	stateDir string
	json     bool
	clear    string

	out, err io.Writer
}

func init() { subcommands = append(subcommands, newCircuitsCmd) }

func newCircuitsCmd(s *streams) *cobra.Command {
	o := &circuitsCmdOptions{}
	cmd := &cobra.Command{
		Use:   "circuits",
		Short: "List the shared circuits, or clear one",
		Long: `circuits lists the circuits in the configured store (--circuits, else
$ACP_GUARD_CIRCUITS, else the file in the state directory): key
(namespace/provider/model/scope), state, cooldown end, probe lease holder,
failures and the latest failure's code. --clear KEY deletes one circuit
(KEY as listed), so that sessions stop parking behind it at once.`,
		Example: `  acp-guard circuits
  acp-guard circuits --circuits nats://10.0.0.5:4222 --json
  acp-guard circuits --clear default/codex-acp/gpt-5/provider`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out, o.err = s.out, s.err
			if _, err := applyConfig(cmd.Flags(), map[string]bool{"circuits": true, "state-dir": true}); err != nil {
				return withCode(exitUsage, err)
			}
			return runCircuits(cmd.Context(), o)
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&o.store.store, "circuits", "", "the store: file (default), or nats://HOST:PORT")
	flags.StringVar(&o.stateDir, "state-dir", "", "state directory holding the file store (default: $XDG_STATE_HOME/acp-guard)")
	flags.BoolVar(&o.json, "json", false, "print one JSON record per line")
	flags.StringVar(&o.clear, "clear", "", "delete the circuit with this key")
	return cmd
}

func runCircuits(ctx context.Context, o *circuitsCmdOptions) error {
	spec := strings.TrimSpace(o.store.store)
	if spec == "off" || spec == "memory" {
		return withCode(exitUsage, fmt.Errorf("circuits are %s (--circuits, ACP_GUARD_CIRCUITS or the config file): none shared to show", spec))
	}
	dir := o.stateDir
	if dir == "" {
		d, err := policy.DefaultStateDir()
		if err != nil {
			return withCode(exitFailure, err)
		}
		dir = d
	}
	st, err := circuit.OpenStore(spec, circuit.Options{Dir: dir, Name: "acp-guard circuits"})
	if err != nil {
		return withCode(exitUsage, err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	recs, err := st.List(ctx)
	if err != nil {
		return withCode(exitFailure, fmt.Errorf("listing circuits: %w", err))
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Key.String() < recs[j].Key.String() })
	if o.clear != "" {
		return clearCircuit(ctx, o, st, recs)
	}
	if o.json {
		enc := json.NewEncoder(o.out)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	return writeCircuitsTable(o.out, recs, time.Now())
}

func clearCircuit(ctx context.Context, o *circuitsCmdOptions, st circuit.Store, recs []circuit.Record) error {
	for _, r := range recs {
		if r.Key.String() != o.clear {
			continue
		}
		k, err := r.Key.Normalize()
		if err != nil {
			return withCode(exitFailure, err)
		}
		if err := st.Delete(ctx, k.ID()); err != nil {
			return withCode(exitFailure, fmt.Errorf("clearing %s: %w", o.clear, err))
		}
		fmt.Fprintf(o.out, "cleared %s\n", o.clear)
		return nil
	}
	return withCode(exitFailure, fmt.Errorf("no circuit %q (see acp-guard circuits)", o.clear))
}

// writeCircuitsTable prints circuits as an aligned table.
func writeCircuitsTable(w io.Writer, recs []circuit.Record, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tSTATE\tCOOLDOWN UNTIL\tLEASE HOLDER\tFAILURES\tCODE\tUPDATED")
	for i := range recs {
		r := &recs[i]
		until, holder := "-", "-"
		if r.OpenAt(now) {
			until = stamp(r.OpenUntil)
		}
		if r.Lease != nil && now.Before(r.Lease.Until) {
			holder = r.Lease.Holder
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(r.Key.String()), r.StateAt(now), until, cell(holder),
			strconv.Itoa(r.Failures), cell(r.Code), stamp(r.UpdatedAt))
	}
	return tw.Flush()
}
