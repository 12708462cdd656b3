package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/replay"
)

// playOffline replays each transcript through the guard pipeline
// (replay.Play) and prints one verdict per prompt turn. Bad transcript
// lines are reported on stderr as FILE:LINE and the rest of the file is
// still played; the exit code is 1 when any line was bad or a file could
// not be read. Divergences (the recording's proxy decided otherwise) are
// notes, not failures.
func playOffline(ctx context.Context, o *replayOptions, files []string) error {
	cfg, err := o.config(nil).Load()
	if err != nil {
		return withCode(exitUsage, errors.Unwrap(err))
	}
	failed := false
	for _, path := range files {
		if err := ctx.Err(); err != nil {
			return withCode(exitFailure, err)
		}
		if !playFile(o, path, cfg) {
			failed = true
		}
	}
	if failed {
		return withCode(exitFailure, nil)
	}
	return nil
}

// playFile plays one transcript; it reports false when the file could not
// be read or held bad lines.
func playFile(o *replayOptions, path string, cfg acpguard.Config) bool {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(o.err, "acp-guard: replay: %v\n", err)
		return false
	}
	events, errs := replay.ReadAll(f)
	f.Close()
	if notTranscript(o.err, path, events, errs) {
		return false
	}
	res, err := acpguard.Replay(events, cfg)
	if err != nil {
		fmt.Fprintf(o.err, "acp-guard: replay: %s: %v\n", path, err)
		return false
	}
	ok := true
	pr := &problems{w: o.err, path: path}
	for _, e := range replay.ErrorsByLine(errs, res.Errors) {
		var (
			le *replay.LineError
			dv *replay.Divergence
		)
		switch {
		case errors.As(e, &le):
			ok = false
			pr.printf("%s:%d: %v", path, le.Line, le.Err)
		case errors.As(e, &dv):
			pr.printf("%s:%d: note: %v", path, dv.Line, dv.Err)
		default:
			ok = false
			pr.printf("%s: %v", path, e)
		}
	}
	pr.done()
	for _, t := range res.Turns {
		if o.json {
			b, err := json.Marshal(t)
			if err != nil {
				fmt.Fprintf(o.err, "acp-guard: replay: %s: %v\n", path, err)
				return false
			}
			fmt.Fprintf(o.out, "%s\n", b)
			continue
		}
		writeTurn(o.out, path, t)
	}
	return ok
}

// writeTurn prints one turn for a person.
func writeTurn(w io.Writer, path string, t guard.TurnReport) {
	fmt.Fprintf(w, "%s: session %s, prompt %s (generation %d): %s", path, t.SessionID, t.RequestID, t.Generation, t.Outcome)
	switch {
	case t.StopReason != "":
		fmt.Fprintf(w, ", stopReason %s", t.StopReason)
	case t.Error != nil:
		fmt.Fprintf(w, ", error %d %q", t.Error.Code, oneLine(t.Error.Message, 120))
	}
	if t.Attempts > 0 {
		fmt.Fprintf(w, ", %d attempts", t.Attempts)
	}
	if t.Suppressed > 0 {
		fmt.Fprintf(w, ", %d control chunk(s) suppressed", t.Suppressed)
	}
	fmt.Fprintln(w)
	if pe := t.ProviderError; pe != nil {
		fmt.Fprintf(w, "  %s (%s, %s confidence) rule %s, replaySafe %v\n", pe.Code, pe.Class, pe.Confidence, orNone(pe.Rule), pe.ReplaySafe)
		if pe.SafeExcerpt != "" {
			fmt.Fprintf(w, "  excerpt: %s\n", oneLine(pe.SafeExcerpt, 160))
		}
	}
	if d := t.Decision; d != nil {
		fmt.Fprintf(w, "  decision: %s", d.Action)
		if d.Reason != "" {
			fmt.Fprintf(w, " (%s)", d.Reason)
		}
		if d.DelayMs > 0 {
			fmt.Fprintf(w, " after %dms", d.DelayMs)
		}
		if d.MaxRetries > 0 {
			fmt.Fprintf(w, ", attempt %d/%d", d.Attempt, d.MaxRetries)
		}
		fmt.Fprintln(w)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// oneLine bounds s and keeps it on one line.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		r := []rune(s[:max])
		s = string(r[:len(r)-1]) + "…"
	}
	return s
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
