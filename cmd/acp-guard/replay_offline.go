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
	"slices"
	"strings"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/replay"
)

// playOffline replays each transcript through the guard pipeline
// (replay.Play) and prints one verdict per prompt turn: for a person, one
// section per file with its summary, and a total when there is more than
// one file; with --json, one line per turn. A directory stands for every
// transcript under it (transcriptsIn). Bad transcript lines are reported on
// stderr as FILE:LINE and the rest of the file is still played; the exit
// code is 1 when any line was bad or a file could not be read. Divergences
// (the recording's proxy decided otherwise) are notes, not failures, and
// say how to reproduce the recorded decision (reproduce.go).
func playOffline(ctx context.Context, o *replayOptions, args []string) error {
	cfg, err := o.config(nil).Load()
	if err != nil {
		return withCode(exitUsage, configFlagError(err))
	}
	files, failed := expandTranscripts(o.err, args)
	if o.html {
		if !writeHTMLReport(o.out, o, files, cfg) || failed {
			return withCode(exitFailure, nil)
		}
		return nil
	}
	var total replayTotal
	for _, path := range files {
		if err := ctx.Err(); err != nil {
			return withCode(exitFailure, err)
		}
		if !o.json && total.files > 0 {
			fmt.Fprintln(o.out)
		}
		sum := playFile(o, path, cfg)
		total.add(sum)
		if !sum.ok {
			failed = true
		}
	}
	if !o.json && len(files) > 1 {
		fmt.Fprintln(o.out)
		total.write(o.out)
	}
	if failed {
		return withCode(exitFailure, nil)
	}
	return nil
}

// expandTranscripts turns the arguments into the files to play: a file as
// it is, a directory as every transcript under it (transcriptsIn). A
// directory that cannot be walked or holds no transcript is reported on w,
// and failed is then true.
func expandTranscripts(w io.Writer, args []string) (files []string, failed bool) {
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil || !fi.IsDir() {
			files = append(files, a) // playFile reports what cannot be read
			continue
		}
		found, err := transcriptsIn(a)
		switch {
		case err != nil:
			fmt.Fprintf(w, "acp-guard: replay: %v\n", err)
			failed = true
		case len(found) == 0:
			fmt.Fprintf(w, "acp-guard: replay: %s: no transcripts (*.jsonl) in the directory or below\n", a)
			failed = true
		}
		files = append(files, found...)
	}
	return files, failed
}

// transcriptsIn lists the transcripts in dir and every directory below it,
// sorted by path (lexically, as filepath.WalkDir visits them): the files
// named *.jsonl, except the *.expected.jsonl expectations that golden
// directories keep beside their transcripts (replay/doc.go, "Golden
// transcripts"). Symbolic links to directories are not followed.
func transcriptsIn(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if !d.IsDir() && strings.HasSuffix(name, ".jsonl") && !strings.HasSuffix(name, ".expected.jsonl") {
			files = append(files, path)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// fileSummary is what one transcript's replay came to, for the summaries.
type fileSummary struct {
	path     string
	ok       bool           // read and parsed without a bad line
	turns    int            // prompt turns
	outcomes map[string]int // turns per outcome
	silent   map[string]int // turns flagged silent, per kind
	bad      int            // bad lines
	notes    int            // divergences
}

// playFile plays one transcript and prints its turns; the summary's ok is
// false when the file could not be read or held bad lines.
func playFile(o *replayOptions, path string, cfg acpguard.Config) fileSummary {
	sum := fileSummary{path: path, outcomes: map[string]int{}, silent: map[string]int{}}
	if !o.json {
		fmt.Fprintf(o.out, "── %s\n", path)
	}
	fail := func(format string, args ...any) fileSummary {
		fmt.Fprintf(o.err, "acp-guard: replay: "+format+"\n", args...)
		if !o.json {
			fmt.Fprintf(o.out, "not replayed: see stderr\n")
		}
		return sum
	}
	f, err := os.Open(path)
	if err != nil {
		return fail("%v", err)
	}
	events, errs := replay.ReadAll(f)
	f.Close()
	if notTranscript(o.err, path, events, errs) {
		if !o.json {
			fmt.Fprintf(o.out, "not replayed: not a transcript\n")
		}
		return sum
	}
	res, err := acpguard.Replay(events, cfg)
	if err != nil {
		return fail("%s: %v", path, err)
	}
	sum.ok = true
	pr := &problems{w: o.err, path: path}
	for _, e := range replay.ErrorsByLine(errs, res.Errors) {
		var (
			le *replay.LineError
			dv *replay.Divergence
		)
		switch {
		case errors.As(e, &le):
			sum.ok = false
			sum.bad++
			pr.printf("%s:%d: %v", path, le.Line, le.Err)
		case errors.As(e, &dv):
			sum.notes++
			pr.printf("%s:%d: note: %v", path, dv.Line, dv.Err)
		default:
			sum.ok = false
			sum.bad++
			pr.printf("%s: %v", path, e)
		}
	}
	pr.done()
	if sum.notes > 0 {
		writeReproduce(o.err, o, path, events, cfg)
	}
	for i, t := range res.Turns {
		sum.turns++
		sum.outcomes[string(t.Outcome)]++
		if t.Silent != "" {
			sum.silent[t.Silent]++
		}
		if o.json {
			b, err := json.Marshal(t)
			if err != nil {
				sum.ok = false
				fmt.Fprintf(o.err, "acp-guard: replay: %s: %v\n", path, err)
				return sum
			}
			fmt.Fprintf(o.out, "%s\n", b)
			continue
		}
		writeTurn(o.out, i+1, t)
	}
	if !o.json {
		sum.write(o.out)
	}
	return sum
}

// maxProblems bounds the problems printed for one transcript; the rest are
// counted.
const maxProblems = 20

// problems prints a transcript's problems, at most maxProblems of them.
type problems struct {
	w    io.Writer
	path string
	n    int
}

func (p *problems) printf(format string, args ...any) {
	p.n++
	if p.n <= maxProblems {
		fmt.Fprintf(p.w, "acp-guard: replay: "+format+"\n", args...)
	}
}

func (p *problems) done() {
	if p.n > maxProblems {
		fmt.Fprintf(p.w, "acp-guard: replay: %s: %d more problems not shown\n", p.path, p.n-maxProblems)
	}
}

// notTranscript reports, in one line, a file none of whose lines is a
// transcript event (a log, a JSON document, the wrong file).
func notTranscript(w io.Writer, path string, events []replay.Event, errs []error) bool {
	if len(events) > 0 || len(errs) == 0 {
		return false
	}
	fmt.Fprintf(w, "acp-guard: replay: %s is not a transcript: none of its lines is a transcript event (first: %v)\n", path, errs[0])
	return true
}
