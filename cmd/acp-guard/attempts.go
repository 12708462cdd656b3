package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/acp-guard/acp-guard/policy"
)

// attemptsOptions are the flags of `acp-guard attempts`.
type attemptsOptions struct {
	session  string
	stateDir string
	json     bool

	out, err io.Writer
}

func init() { subcommands = append(subcommands, newAttemptsCmd) }

func newAttemptsCmd(s *streams) *cobra.Command {
	o := &attemptsOptions{}
	cmd := &cobra.Command{
		Use:   "attempts",
		Short: "Print the recovery attempt log",
		Long: `attempts prints the append-only log of recovery attempts and decisions
(<state dir>/attempts.jsonl) as a table, oldest first. The state directory
is --state-dir, else ACP_GUARD_STATE_DIR, else "state-dir" in the config
file, else $XDG_STATE_HOME/acp-guard, or ~/.local/state/acp-guard on
Linux (acp-guard under ~/Library/Caches on macOS, %LocalAppData% on
Windows).

A line that is not a whole record (torn by a crash, or corrupt) is skipped
and named on stderr; the other records are printed as usual.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out, o.err = s.out, s.err
			if _, err := applyConfig(cmd.Flags(), map[string]bool{"state-dir": true}); err != nil {
				return withCode(exitUsage, err)
			}
			return runAttempts(cmd.Context(), o)
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&o.session, "session", "", "only this ACP session id")
	flags.StringVar(&o.stateDir, "state-dir", "", "state directory holding "+policy.LogFileName)
	flags.BoolVar(&o.json, "json", false, "print one JSON record per line")
	return cmd
}

func runAttempts(_ context.Context, o *attemptsOptions) error {
	dir := o.stateDir
	if dir == "" {
		d, err := policy.DefaultStateDir()
		if err != nil {
			return withCode(exitFailure, err)
		}
		dir = d
	}
	path := filepath.Join(dir, policy.LogFileName)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(o.err, "acp-guard: no attempts recorded (%s does not exist)\n", path)
		return nil
	}
	if err != nil {
		return withCode(exitFailure, err)
	}
	defer f.Close()
	recs, skipped, err := policy.ReadLog(f, o.session)
	if err != nil {
		return withCode(exitFailure, fmt.Errorf("%s: %w", path, err))
	}
	for _, sk := range skipped {
		fmt.Fprintf(o.err, "acp-guard: %s: skipped %v\n", path, sk)
	}
	if o.json {
		for _, r := range recs {
			line, err := json.Marshal(r)
			if err != nil {
				return withCode(exitFailure, err)
			}
			if _, err := fmt.Fprintf(o.out, "%s\n", line); err != nil {
				return err
			}
		}
		return nil
	}
	return writeAttemptsTable(o.out, recs)
}

// writeAttemptsTable prints records as an aligned table.
func writeAttemptsTable(w io.Writer, recs []policy.Record) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSESSION\tREQUEST\tGEN\tATTEMPT\tCLASS\tCODE\tACTION\tDELAY\tDEADLINE\tREASON\tOUTCOME")
	for _, r := range recs {
		attempt := strconv.Itoa(r.Attempt)
		if d := r.Decision; d.Action == policy.ActionRetry && d.MaxRetries > 0 {
			attempt = fmt.Sprintf("%d (retry %d/%d)", r.Attempt, d.Attempt, d.MaxRetries)
		}
		delay, deadline := "-", "-"
		if r.Decision.DelayMs > 0 {
			delay = (time.Duration(r.Decision.DelayMs) * time.Millisecond).String()
		}
		if !r.Decision.Deadline.IsZero() {
			deadline = stamp(r.Decision.Deadline)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			stamp(r.Time), cell(r.SessionID), cell(r.RequestID), r.Generation, attempt,
			cell(r.Class), cell(r.Code), cell(string(r.Decision.Action)), delay, deadline,
			cell(r.Decision.Reason), cell(string(r.Outcome)))
	}
	return tw.Flush()
}

// stamp formats a time in UTC with milliseconds.
func stamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// cell makes a logged string safe for one table cell: "-" when empty,
// quoted when it holds spaces or unprintable characters (which would
// misalign the table or drive the terminal).
func cell(s string) string {
	if s == "" {
		return "-"
	}
	if strings.IndexFunc(s, func(r rune) bool { return r == ' ' || !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}
