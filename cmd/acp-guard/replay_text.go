package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/guard"
)

// The readable form of `acp-guard replay`: what --json says, for a person.
// Turns are numbered from 1 in the order they settled — the numbers
// `classify --transcript … --turn N` takes — beside the JSON-RPC id of the
// client's request (the --json line's requestId), which --turn also takes.

// writeTurn prints turn n of a transcript.
func writeTurn(w io.Writer, n int, t acpguard.TurnReport) {
	fmt.Fprintf(w, "turn %d (request id %s, session %s, generation %d): %s", n, t.RequestID, t.SessionID, t.Generation, t.Outcome)
	if t.Silent != "" {
		fmt.Fprintf(w, " but flagged silent (%s)", t.Silent)
	}
	switch {
	case t.StopReason != "":
		fmt.Fprintf(w, ", stopReason %s", t.StopReason)
	case t.Error != nil:
		fmt.Fprintf(w, ", error %d %q", t.Error.Code, oneLine(t.Error.Message, 120))
	}
	if t.Attempts > 0 {
		fmt.Fprintf(w, ", %d attempts", t.Attempts)
	}
	if t.Model != "" {
		fmt.Fprintf(w, ", on model %s", t.Model)
	}
	if t.Suppressed > 0 {
		fmt.Fprintf(w, ", %d control chunk(s) suppressed", t.Suppressed)
	}
	fmt.Fprintln(w)
	if t.Silent != "" {
		fmt.Fprintf(w, "  silent failure %s: %s (result._meta.acpGuard.silent)\n", t.Silent, silentMeaning[t.Silent])
	}
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
	if t.LateOutput > 0 {
		fmt.Fprintf(w, "  late output: %d text chunk(s) after the answer\n", t.LateOutput)
	}
}

// silentMeaning says what each silent kind means (docs/WIRE.md, "A silent
// failure").
var silentMeaning = map[string]string{
	guard.SilentEmpty:     "the turn ended end_turn with no visible output",
	guard.SilentTruncated: "text was streamed but the reported usage shows zero output tokens",
	guard.SilentRepeated:  "the turn's opening text was streamed again (the agent retried on its own)",
}

// outcomeOrder is the order outcomes are counted in a summary; any other
// follows, sorted.
var outcomeOrder = []string{string(acpguard.OutcomePassed), string(acpguard.OutcomeRewritten), string(acpguard.OutcomeAnnotated), string(acpguard.OutcomeRetried), string(acpguard.OutcomeFailed)}

// counts spells a tally as "2 passed, 1 annotated" in a stable order.
func counts(m map[string]int, order []string) string {
	var parts []string
	for _, k := range order {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
		}
	}
	var rest []string
	for k := range m {
		if !slices.Contains(order, k) && m[k] > 0 {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

// turnsLine is "3 turns: 2 passed, 1 annotated; 1 flagged silent (empty)".
func turnsLine(turns int, outcomes, silent map[string]int) string {
	s := plural(turns, "turn")
	if turns > 0 {
		s += ": " + counts(outcomes, outcomeOrder)
	}
	if n := sumOf(silent); n > 0 {
		s += fmt.Sprintf("; %d flagged silent (%s)", n, counts(silent, []string{guard.SilentEmpty, guard.SilentTruncated, guard.SilentRepeated}))
	}
	return s
}

// write prints the file's summary line.
func (s fileSummary) write(w io.Writer) {
	line := "summary: " + turnsLine(s.turns, s.outcomes, s.silent)
	if s.bad > 0 {
		line += fmt.Sprintf("; %s (stderr)", plural(s.bad, "bad line"))
	}
	if s.notes > 0 {
		line += fmt.Sprintf("; the recording decided differently (%s on stderr)", plural(s.notes, "note"))
	}
	fmt.Fprintln(w, line)
}

// replayTotal adds up the files of one replay.
type replayTotal struct {
	files, failed, diverged, turns int
	outcomes, silent               map[string]int
}

func (t *replayTotal) add(s fileSummary) {
	if t.outcomes == nil {
		t.outcomes, t.silent = map[string]int{}, map[string]int{}
	}
	t.files++
	t.turns += s.turns
	if !s.ok {
		t.failed++
	}
	if s.notes > 0 {
		t.diverged++
	}
	for k, v := range s.outcomes {
		t.outcomes[k] += v
	}
	for k, v := range s.silent {
		t.silent[k] += v
	}
}

// write prints the total summary line.
func (t replayTotal) write(w io.Writer) {
	line := fmt.Sprintf("total: %s, %s", plural(t.files, "file"), turnsLine(t.turns, t.outcomes, t.silent))
	if t.failed > 0 {
		line += fmt.Sprintf("; %d not read or with bad lines", t.failed)
	}
	if t.diverged > 0 {
		line += fmt.Sprintf("; %d decided differently from the recording", t.diverged)
	}
	fmt.Fprintln(w, line)
}

func sumOf(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
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
