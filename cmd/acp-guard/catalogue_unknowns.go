package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/internal/safefile"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/replay"
)

// unknownsOptions are the flags of `acp-guard catalogue unknowns`.
type unknownsOptions struct {
	json     bool
	skeleton string
	paths    []string
	out, err io.Writer
}

func newCatalogueUnknownsCmd(s *streams) *cobra.Command {
	o := &unknownsOptions{}
	cmd := &cobra.Command{
		Use:   "unknowns FILE|DIR...",
		Short: "Group the unclassified failures of transcripts and attempt logs by shape; write a rule skeleton",
		Long: `unknowns reads transcripts (--record files, replayed through the same pipeline as
the live proxy) and attempt logs (attempts.jsonl), in the files named or under
the directories named (*.jsonl), and groups the failures that were answered
unclassified by shape: the redacted excerpt with numbers, ids, hosts, URLs and
quoted names collapsed. It prints each shape with its count, the agents
(adapters) and the models it came from (the provider is what the model and
the agent say). Provider text is never
printed as it was: only shapes. An attempt log records no excerpt: its
unclassified failures are counted under one shape of their own.

--skeleton FILE writes a catalogue overlay to fill in: one rule per shape with
the redacted excerpt as its positive fixture and a placeholder negative. Fill
in each rule's id, code, scope and pattern and the negative's text, then
  acp-guard catalogue test FILE
  acp-guard catalogue publish FILE    (or --catalogue-overlay FILE)`,
		Example: `  acp-guard catalogue unknowns ~/.local/state/acp-guard/ /tmp/sessions/
  acp-guard catalogue unknowns --json session.jsonl
  acp-guard catalogue unknowns --skeleton overlay.json session.jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.out, o.err, o.paths = s.out, s.err, args
			return runCatalogueUnknowns(o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object per shape")
	cmd.Flags().StringVar(&o.skeleton, "skeleton", "", "write a rule skeleton (a catalogue overlay with fixtures) to this new file")
	return cmd
}

// unknownShape is one group of unclassified failures.
type unknownShape struct {
	Shape  string   `json:"shape"`
	Count  int      `json:"count"`
	Agents []string `json:"agents"` // the adapters (the provider error's providerId)
	Models []string `json:"models"` // the models the failed attempts ran on, where the agent said

	// example is the first occurrence's redacted excerpt and source: the
	// skeleton's positive fixture (never printed by the listing).
	example   string
	source    classify.Source
	adapter   string
	rpcCode   *int
	seen      map[string]map[string]bool
	fromLog   bool
	firstFile string
}

// attemptLogShape is the shape of the attempt log's unclassified failures.
const attemptLogShape = "(attempt log: no excerpt recorded)"

func runCatalogueUnknowns(o *unknownsOptions) error {
	files, err := unknownsFiles(o.paths)
	if err != nil {
		return withCode(exitFailure, err)
	}
	groups := map[string]*unknownShape{}
	for _, f := range files {
		err := readUnknowns(f.name, groups)
		switch {
		case errors.Is(err, errNotInput) && !f.named:
			fmt.Fprintf(o.err, "acp-guard: catalogue unknowns: %s skipped: %v\n", f.name, err)
		case err != nil:
			return withCode(exitFailure, fmt.Errorf("%s: %w", f.name, err))
		}
	}
	shapes := make([]*unknownShape, 0, len(groups))
	for _, g := range groups {
		for _, k := range []string{"agents", "models"} {
			var vs []string
			for v := range g.seen[k] {
				vs = append(vs, v)
			}
			sort.Strings(vs)
			switch k {
			case "agents":
				g.Agents = vs
			case "models":
				g.Models = vs
			}
		}
		shapes = append(shapes, g)
	}
	sort.Slice(shapes, func(i, j int) bool {
		if shapes[i].Count != shapes[j].Count {
			return shapes[i].Count > shapes[j].Count
		}
		return shapes[i].Shape < shapes[j].Shape
	})
	if o.json {
		enc := json.NewEncoder(o.out)
		enc.SetEscapeHTML(false)
		for _, g := range shapes {
			if err := enc.Encode(g); err != nil {
				return err
			}
		}
	} else {
		tw := tabwriter.NewWriter(o.out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "COUNT\tAGENTS\tMODELS\tSHAPE\n")
		for _, g := range shapes {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", g.Count, orDash(g.Agents), orDash(g.Models), g.Shape)
		}
		fmt.Fprintf(tw, "\n%d unclassified failure shape(s) in %d file(s)\n", len(shapes), len(files))
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if o.skeleton != "" {
		b := skeleton(shapes)
		if err := writeNewFile(o.skeleton, b); err != nil {
			return withCode(exitFailure, fmt.Errorf("--skeleton: %w", err))
		}
		fmt.Fprintf(o.err, "acp-guard: wrote a rule skeleton for %d shape(s) to %s: fill in each rule's id, code, scope and pattern, then run acp-guard catalogue test %s\n",
			countSkeletal(shapes), o.skeleton, o.skeleton)
	}
	return nil
}

// writeNewFile writes b to a new file (0600, never over an existing file
// or through a symbolic link).
func writeNewFile(name string, b []byte) error {
	f, err := safefile.Open(name, safefile.New)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func orDash(vs []string) string {
	if len(vs) == 0 {
		return "-"
	}
	return strings.Join(vs, ",")
}

// inputFile is one file to read; named: given on the command line (not
// found under a directory), so that it must be a transcript or an
// attempt log.
type inputFile struct {
	name  string
	named bool
}

// errNotInput: a file is neither a transcript nor an attempt log (one
// found under a directory is skipped with a note).
var errNotInput = errors.New("neither a transcript nor an attempt log")

// unknownsFiles expands the paths: files as named, directories to the
// *.jsonl files under them (in name order).
func unknownsFiles(paths []string) ([]inputFile, error) {
	var out []inputFile
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, inputFile{p, true})
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".jsonl") {
				out = append(out, inputFile{path, false})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readUnknowns adds the unclassified failures of one file: an attempt log
// (its first record has "decision") or a transcript.
func readUnknowns(file string, groups map[string]*unknownShape) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	var probe struct {
		Dir      *string          `json:"dir"`
		Decision *json.RawMessage `json:"decision"`
	}
	if err := json.Unmarshal(first, &probe); err != nil {
		return fmt.Errorf("%w: the first line is not a JSON object", errNotInput)
	}
	switch {
	case probe.Decision != nil:
		return attemptLogUnknowns(b, groups, file)
	case probe.Dir != nil:
		return transcriptUnknowns(b, groups, file)
	}
	return fmt.Errorf(`%w: no "dir" (a transcript's) or "decision" (an attempt record's) on the first line`, errNotInput)
}

func attemptLogUnknowns(b []byte, groups map[string]*unknownShape, file string) error {
	recs, _, err := policy.ReadLog(bytes.NewReader(b), "")
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Code != classify.CodeUnclassified || r.Outcome != policy.AttemptStopped {
			continue
		}
		g := group(groups, attemptLogShape, file)
		g.fromLog = true
		g.add("models", r.Model)
	}
	return nil
}

func transcriptUnknowns(b []byte, groups map[string]*unknownShape, file string) error {
	events, readErrs := replay.ReadAll(bufio.NewReader(bytes.NewReader(b)))
	if len(events) == 0 {
		if len(readErrs) > 0 {
			return readErrs[0]
		}
		return errors.New("no events")
	}
	// The evidence of the turn's last classification, for the skeleton's
	// fixture (source, adapter, JSON-RPC code; not its text). A recorded
	// overlay's engine is not observed: its turns fall back to rpc_error.
	var last *classify.Evidence
	_, err := acpguard.Replay(events, acpguard.Config{
		Catalogue: catalogueOf(catalogue.Default().Observed(func(ev classify.Evidence, _ classify.Verdict) { last = &ev })),
		OnTurn: func(r acpguard.TurnReport) {
			ev := last
			last = nil
			pe := r.ProviderError
			if pe == nil || pe.Code != classify.CodeUnclassified {
				return
			}
			red := classify.RedactSecrets(pe.SafeExcerpt)
			g := group(groups, unknownShapeOf(red), file)
			if g.example == "" {
				g.example, g.source, g.adapter = red, classify.SourceRPCError, pe.ProviderID
				if ev != nil {
					g.source, g.adapter, g.rpcCode = ev.Source, ev.Adapter, ev.RPCCode
				}
			}
			g.add("agents", pe.ProviderID)
			g.add("models", pe.Model)
		},
	})
	return err
}

func group(groups map[string]*unknownShape, shape, file string) *unknownShape {
	g := groups[shape]
	if g == nil {
		g = &unknownShape{Shape: shape, seen: map[string]map[string]bool{}, firstFile: file}
		groups[shape] = g
	}
	g.Count++
	return g
}

func (g *unknownShape) add(kind, v string) {
	if v == "" {
		return
	}
	if g.seen[kind] == nil {
		g.seen[kind] = map[string]bool{}
	}
	g.seen[kind][v] = true
}

// The collapses of a shape, in order: what varies between occurrences of
// one failure (and may name a person, a tenant or a machine) becomes a
// placeholder. Compiled on first use, by `catalogue unknowns` only.
var shapeRules = sync.OnceValue(func() []shapeRule {
	return []shapeRule{
		{regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>)]+`), "<url>"},
		{regexp.MustCompile(`"[^"]{0,200}"|'[^']{0,200}'|` + "`[^`]{0,200}`"), "<quoted>"},
		{regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`), "<id>"},
		{regexp.MustCompile(`\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b`), "<ip>"},
		{regexp.MustCompile(`\b(?:[a-zA-Z0-9-]+\.)+(?:com|net|org|io|ai|dev|cloud|app|co|internal|local|[a-z]{2})(?::\d+)?\b`), "<host>"},
		{regexp.MustCompile(`[\w.+-]+@<host>`), "<email>"},
		{regexp.MustCompile(`\b[A-Za-z]*[0-9][A-Za-z0-9]*[_-][A-Za-z0-9_-]+\b|\b[A-Za-z]+[_-][A-Za-z0-9_-]*[0-9][A-Za-z0-9_-]*\b`), "<id>"},
		{regexp.MustCompile(`\b[0-9a-fA-F]{12,}\b|\b[A-Za-z0-9]*[0-9][A-Za-z0-9]*[A-Za-z][A-Za-z0-9]{6,}\b`), "<id>"},
		{regexp.MustCompile(`\d+(?:[.,]\d+)*`), "<n>"},
		{regexp.MustCompile(`\s+`), " "},
	}
})

type shapeRule struct {
	re   *regexp.Regexp
	with string
}

// maxShape bounds a shape's length (runes).
const maxShape = 200

// unknownShapeOf normalises a redacted excerpt into its shape.
func unknownShapeOf(excerpt string) string {
	s := excerpt
	for _, r := range shapeRules() {
		s = r.re.ReplaceAllString(s, r.with)
	}
	s = strings.TrimSpace(s)
	if rs := []rune(s); len(rs) > maxShape {
		s = string(rs[:maxShape]) + "…"
	}
	if s == "" {
		return "(empty excerpt)"
	}
	return s
}

func countSkeletal(shapes []*unknownShape) int {
	n := 0
	for _, g := range shapes {
		if !g.fromLog {
			n++
		}
	}
	return n
}

// skeleton is the overlay document to fill in: a rule per shape with an
// excerpt, a positive fixture (the redacted excerpt as the message of
// the evidence) and a placeholder negative.
func skeleton(shapes []*unknownShape) []byte {
	type evidence struct {
		Source  string `json:"source"`
		Adapter string `json:"adapter,omitempty"`
		RPCCode *int   `json:"rpcCode,omitempty"`
		Message string `json:"message"`
	}
	doc := classify.Catalogue{Version: "FILL-1"}
	n := 0
	for _, g := range shapes {
		if g.fromLog {
			continue
		}
		n++
		id := fmt.Sprintf("local.unknown_%d.v1", n)
		src, adapter := g.source, g.adapter
		doc.Rules = append(doc.Rules, classify.Rule{
			ID: id, Tier: classify.TierSignature, Adapter: "any", Sources: []classify.Source{src},
			Match: classify.Match{Regex: "FILL: an RE2 signature of: " + regexp.QuoteMeta(g.Shape)},
			Code:  "FILL", Confidence: "medium", Scope: "FILL",
			Note: fmt.Sprintf("seen %d time(s); agents %s; models %s; first in %s. Rename the id (vendor.signature.v1), set code, scope and the pattern",
				g.Count, orDash(g.Agents), orDash(g.Models), filepath.Base(g.firstFile)),
		})
		pos, _ := json.Marshal(evidence{Source: string(src), Adapter: adapter, RPCCode: g.rpcCode, Message: g.example})
		neg, _ := json.Marshal(evidence{Source: string(src), Adapter: adapter, Message: "FILL: a sentence that mentions this failure but is not it (agent prose, a log line)"})
		doc.Fixtures = append(doc.Fixtures,
			classify.Fixture{Name: id + " +1", Rule: id, Match: true, Evidence: pos},
			classify.Fixture{Name: id + " -1", Rule: id, Match: false, Code: classify.CodeUnclassified, Evidence: neg})
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(doc)
	return b.Bytes()
}
