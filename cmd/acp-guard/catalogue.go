package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/classify"
)

// catalogueOptions are the flags of `acp-guard catalogue …`.
type catalogueOptions struct {
	file string
	json bool

	out, err io.Writer
}

func init() { subcommands = append(subcommands, newCatalogueCmd) }

func newCatalogueCmd(s *streams) *cobra.Command {
	o := &catalogueOptions{}
	cmd := &cobra.Command{
		Use:   "catalogue",
		Short: "Inspect, test and lint the classification catalogue",
		Long: `catalogue works on the embedded rule catalogue, or with --catalogue FILE on an
operator-reviewed one (a JSON document with version, rules and fixtures; see
docs/CATALOGUE.md).`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&o.file, "catalogue", "", "catalogue file to use instead of the embedded one")
	sub := func(use, short string, args cobra.PositionalArgs, run func(*catalogueOptions, []string) error) *cobra.Command {
		return &cobra.Command{Use: use, Short: short, Args: args,
			RunE: func(cmd *cobra.Command, a []string) error {
				o.out, o.err = s.out, s.err
				return run(o, a)
			}}
	}
	list := sub("list", "List the rules in evaluation order", cobra.NoArgs, runCatalogueList)
	list.Flags().BoolVar(&o.json, "json", false, "print one JSON rule per line")
	test := sub("test [OVERLAY]", "Run every fixture and print per-rule results (exit 1 on failure); with OVERLAY, of the catalogue merged with that overlay, linted too", cobra.MaximumNArgs(1), runCatalogueTest)
	test.Flags().BoolVar(&o.json, "json", false, "print the report as JSON")
	cmd.AddCommand(
		list,
		sub("show ID", "Print one rule and its fixtures", cobra.ExactArgs(1), runCatalogueShow),
		test,
		sub("lint", "Report unreachable rules, missing fixtures, codes without a class (exit 1 on findings)", cobra.NoArgs, runCatalogueLint),
		sub("export", "Print the catalogue with its fixtures as one document, a start for --catalogue FILE", cobra.NoArgs, runCatalogueExport),
	)
	cmd.AddCommand(catalogueFieldCmds(s)...)
	return cmd
}

// catalogueData returns the raw catalogue: embedded, or read from o.file.
func catalogueData(o *catalogueOptions) (classify.Catalogue, error) {
	if o.file == "" {
		return catalogue.Embedded()
	}
	b, err := os.ReadFile(o.file)
	if err != nil {
		return classify.Catalogue{}, err
	}
	c, err := catalogue.Parse(b)
	if err != nil {
		return c, fmt.Errorf("%s: %w", o.file, err)
	}
	return c, nil
}

// catalogueEngine compiles the catalogue without requiring its fixtures to
// pass, so that test can report them.
func catalogueEngine(o *catalogueOptions) (*classify.Engine, error) {
	c, err := catalogueData(o)
	if err != nil {
		return nil, withCode(exitFailure, err)
	}
	e, err := classify.Compile(c)
	if err != nil {
		return nil, withCode(exitFailure, err)
	}
	return e, nil
}

func runCatalogueList(o *catalogueOptions, _ []string) error {
	e, err := catalogueEngine(o)
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(o.out)
		for _, r := range e.Rules() {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(o.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ID\tTIER\tADAPTER\tCODE\tCLASS\tCONFIDENCE\n")
	for _, r := range e.Rules() {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.ID, r.Tier, r.Adapter, r.Code, classify.ClassOf(r.Code), r.Confidence)
	}
	fmt.Fprintf(tw, "\ncatalogue %s: %d rules\n", e.Version(), len(e.Rules()))
	return tw.Flush()
}

func runCatalogueShow(o *catalogueOptions, args []string) error {
	e, err := catalogueEngine(o)
	if err != nil {
		return err
	}
	r, ok := e.Rule(args[0])
	if !ok {
		return withCode(exitFailure, fmt.Errorf("%w %q in catalogue %s", classify.ErrUnknownRule, args[0], e.Version()))
	}
	var fixtures []classify.Fixture
	for _, f := range e.Catalogue().Fixtures {
		if f.Rule == r.ID {
			fixtures = append(fixtures, f)
		}
	}
	out := struct {
		Class    classify.Class     `json:"class"`
		Rule     classify.Rule      `json:"rule"`
		Fixtures []classify.Fixture `json:"fixtures"`
	}{classify.ClassOf(r.Code), r, fixtures}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.out, "%s\n", b)
	return err
}

func runCatalogueTest(o *catalogueOptions, args []string) error {
	var e *classify.Engine
	var err error
	var findings []classify.Finding
	if len(args) == 1 {
		e, findings, err = overlayEngine(o, args[0])
	} else {
		e, err = catalogueEngine(o)
	}
	if err != nil {
		return err
	}
	rep := e.Test()
	if o.json {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(o.out, "%s\n", b)
	} else {
		for _, r := range rep.Rules {
			status := "ok  "
			if len(r.Failures) > 0 {
				status = "FAIL"
			}
			fmt.Fprintf(o.out, "%s %s (%d+ %d-)\n", status, r.Rule, r.Positives, r.Negatives)
			for _, f := range r.Failures {
				fmt.Fprintf(o.out, "     %s\n", f)
			}
		}
		fmt.Fprintf(o.out, "catalogue %s: %d rules, %d fixtures, %d failed\n", rep.Version, len(rep.Rules), rep.Fixtures, rep.Failed)
	}
	for _, f := range findings {
		fmt.Fprintf(o.err, "lint: %s\n", f)
	}
	if !rep.OK() || len(findings) > 0 {
		return withCode(exitFailure, nil)
	}
	return nil
}

func runCatalogueLint(o *catalogueOptions, _ []string) error {
	c, err := catalogueData(o)
	if err != nil {
		return withCode(exitFailure, err)
	}
	findings := classify.Lint(c)
	for _, f := range findings {
		fmt.Fprintf(o.out, "%s\n", f)
	}
	if len(findings) > 0 {
		fmt.Fprintf(o.err, "acp-guard: catalogue %s: %d finding(s)\n", c.Version, len(findings))
		return withCode(exitFailure, nil)
	}
	fmt.Fprintf(o.out, "catalogue %s: %d rules, %d fixtures, no findings\n", c.Version, len(c.Rules), len(c.Fixtures))
	return nil
}

func runCatalogueExport(o *catalogueOptions, _ []string) error {
	c, err := catalogueData(o)
	if err != nil {
		return withCode(exitFailure, err)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return err
	}
	_, err = io.WriteString(o.out, b.String())
	return err
}
