package observers

import (
	"strings"
	"unicode"

	"github.com/acp-guard/acp-guard/classify"
)

// Text-reported failures, for every adapter. A turn whose whole visible
// text is one error line (classify.ParseErrorLine) and that ends end_turn
// is a failure the agent reported as text. While the turn's text may
// still be one (it starts like an error line and is within
// classify.MaxReportBytes), the observers keep it, bounded, and do not
// count it as output: the guard decides at prompt return (SettleErrorLine)
// whether it was a failure report — then it stays a diagnostic, not
// output for the safety gate — or assistant output after all. Retry notes
// (classify.ParseNote) are left out of the text: they are diagnostics.
// Thoughts, plans and tool calls leave the text open (they make the turn
// unsafe to replay, but do not make an error line an answer); anything
// that cannot be part of one error line closes it, and then everything
// it held is output.

// errorLineState is a turn's candidate error line.
type errorLineState struct {
	buf    []byte
	closed bool // the turn's text is not one error line (or not any more)
	head   bool // buf starts with an error line's head
	lines  bool // buf holds a line break: later text is checked as continuation lines
}

// takeErrorLine offers one visible message chunk's text (complete: the
// whole chunk) to the turn's candidate error line. It reports whether the
// text was taken (it is not output, for now).
func (t *Turn) takeErrorLine(text string, complete bool) bool {
	l := &t.text
	if l.closed {
		return false
	}
	if !complete || text == "" || len(l.buf)+len(text) > classify.MaxReportBytes {
		t.closeErrorLine()
		return false
	}
	l.buf = append(l.buf, text...)
	l.lines = l.lines || strings.Contains(text, "\n")
	if (l.lines || strings.Contains(text, "`")) && classify.ErrorLineBroken(string(l.buf)) {
		t.closeErrorLine()
		return false
	}
	if !l.head {
		s := string(l.buf)
		switch {
		case classify.StartsErrorLine(s):
			l.head = true
		case !classify.ErrorLinePending(s):
			t.closeErrorLine()
			return false
		}
	}
	t.Evidence.ErrorLine = true
	return true
}

// closeErrorLine ends the candidate: what it held was output.
func (t *Turn) closeErrorLine() {
	if t.Evidence.ErrorLine {
		t.Evidence.AssistantOutput = true
		t.Evidence.ErrorLine = false
	}
	t.text = errorLineState{closed: true}
}

// ErrorLineText returns the turn's whole visible text when it may be one
// error line: it starts with an error line's head and nothing closed it.
func (t *Turn) ErrorLineText() (string, bool) {
	if t.text.closed || !t.text.head || !t.Evidence.ErrorLine {
		return "", false
	}
	return strings.TrimFunc(string(t.text.buf), unicode.IsSpace), true
}

// SettleErrorLine records the guard's decision on the turn's candidate
// error line: a failure report stays a diagnostic (not output); anything
// else was assistant output. Either way the candidate is closed.
func (t *Turn) SettleErrorLine(report bool) {
	if report {
		t.reported = strings.TrimFunc(string(t.text.buf), unicode.IsSpace)
		t.Evidence.ErrorLine = false
		t.text = errorLineState{closed: true}
		return
	}
	t.closeErrorLine()
}

// ReportedText returns the turn's error line once the guard settled it as
// a failure report (SettleErrorLine), "" otherwise: the agent's error
// text in message chunks, evidence beside its JSON-RPC error or exit.
func (t *Turn) ReportedText() string { return t.reported }

// LastNote returns the turn's latest retry note in assistant text (an ACP
// diagnostic the client saw), "" when there was none.
func (t *Turn) LastNote() string { return t.lastNote }
