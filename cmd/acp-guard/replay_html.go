package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/replay"
)

// The --html form of `acp-guard replay`: one self-contained page (inline
// CSS, no script, no external asset) with a section per transcript — its
// turns on a timeline, then every frame and every guard event in order.
//
// What the page shows is chosen so that it can be attached to a bug report
// (docs/TRANSCRIPTS.md, "An HTML report"): a frame is shown by its
// metadata (direction, kind, method, id, update kind, size, suppressed or
// written by acp-guard) and its shape — the JSON with every string value
// replaced by its length, except the protocol's own vocabulary (shapeKeys)
// — never its text; a stderr line by its length; a failure by its verdict
// and the catalogue's safe excerpt. html/template escapes all of it.

//go:embed report/report.html.tmpl
var reportTemplate string

// reportPage is parsed on first use: a session that writes no report pays
// nothing for it.
var reportPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"pct": func(v, total int64) string {
			if total <= 0 {
				return "0"
			}
			return fmt.Sprintf("%.2f", float64(v)*100/float64(total))
		},
	}).Parse(reportTemplate))
})

// maxFrameShape bounds a frame's shape on the page.
const maxFrameShape = 240

// shapeKeys are the keys whose string values a frame's shape keeps: the
// protocol's vocabulary, not content.
var shapeKeys = map[string]bool{
	"jsonrpc": true, "id": true, "sessionId": true, "method": true, "sessionUpdate": true, "stopReason": true,
	"kind": true, "status": true, "type": true, "role": true, "protocolVersion": true,
	"code": true, "class": true, "rule": true, "schema": true, "outcome": true,
}

type reportData struct {
	Version string
	Files   []reportFile
}

type reportFile struct {
	Path     string
	Problem  string // why the file could not be replayed, if it could not
	Adapter  string
	Recorded string // the recording's acp-guard version
	Start    string
	Duration int64 // ms, the last event's t_ms (at least 1)
	Turns    []reportTurn
	Rows     []reportRow
	Notes    []string // bad lines and divergences, as the text output says them
}

type reportTurn struct {
	N                      int
	RequestID, Session     string
	Outcome, Silent        string
	StopReason             string
	Code, Class, Rule      string
	Confidence, Excerpt    string
	Decision               string
	Attempts, Suppressed   int
	StartMs, EndMs, SpanMs int64
}

// reportRow is one line of a transcript's timeline: a recorded event or
// something the guard decided.
type reportRow struct {
	TMs   int64
	Turn  int // 0: not part of a prompt turn
	Kind  string
	What  string
	Shape string
	Size  int
	Tags  []string
}

// writeHTMLReport replays every file and writes the page to w; it reports
// whether every file was read and replayed without a bad line.
func writeHTMLReport(w io.Writer, o *replayOptions, files []string, cfg acpguard.Config) bool {
	data := reportData{Version: versionString()}
	ok := true
	for _, path := range files {
		f, good := htmlFile(o, path, cfg)
		ok = ok && good
		data.Files = append(data.Files, f)
	}
	var buf bytes.Buffer
	if err := reportPage().Execute(&buf, data); err != nil {
		fmt.Fprintf(o.err, "acp-guard: replay: %v\n", err)
		return false
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		fmt.Fprintf(o.err, "acp-guard: replay: %v\n", err)
		return false
	}
	return ok
}

// htmlFile replays one transcript, collecting the guard's events beside
// its turns.
func htmlFile(o *replayOptions, path string, cfg acpguard.Config) (reportFile, bool) {
	rf := reportFile{Path: path}
	events, errs := replay.ReadFile(path)
	if len(events) == 0 && len(errs) > 0 {
		rf.Problem = "not a transcript: " + errs[0].Error()
		fmt.Fprintf(o.err, "acp-guard: replay: %s: %v\n", path, errs[0])
		return rf, false
	}
	var gevs []event.Event
	cfg.EventFrames = false
	cfg.OnEvent = func(e acpguard.Event) { gevs = append(gevs, copyEvent(e)) }
	res, err := acpguard.Replay(events, cfg)
	if err != nil {
		rf.Problem = err.Error()
		fmt.Fprintf(o.err, "acp-guard: replay: %s: %v\n", path, err)
		return rf, false
	}
	ok := true
	for _, e := range replay.ErrorsByLine(errs, res.Errors) {
		var dv *replay.Divergence
		if !errors.As(e, &dv) {
			ok = false
		}
		rf.Notes = append(rf.Notes, oneLine(e.Error(), 300))
	}
	epoch := replay.DefaultEpoch
	if m, found := replay.MetaOf(events); found {
		rf.Adapter, rf.Recorded = m.Adapter, m.Version
		if !m.Start.IsZero() {
			epoch = m.Start
			rf.Start = m.Start.UTC().Format(time.RFC3339)
		}
	}
	rf.Turns, rf.Rows = timeline(events, gevs, res.Turns, epoch)
	for _, r := range rf.Rows {
		rf.Duration = max(rf.Duration, r.TMs)
	}
	rf.Duration = max(rf.Duration, 1)
	for i := range rf.Turns {
		t := &rf.Turns[i]
		t.SpanMs = max(t.EndMs-t.StartMs, 0)
	}
	return rf, ok
}

// copyEvent keeps what an event's slices alias (valid only during the
// call) beyond it.
func copyEvent(e event.Event) event.Event {
	switch v := e.(type) {
	case event.Answered:
		v.Report.RequestID = append(json.RawMessage(nil), v.Report.RequestID...)
		return v
	}
	return e
}

// turnKey names a prompt turn: its session and request id.
func turnKey(session string, id json.RawMessage) string {
	return session + "\x00" + string(id)
}

// timeline puts the transcript's events and the guard's on one time line,
// ordered by t_ms (within one millisecond, the recorded event first, then
// what the guard decided on it), with each row's turn.
func timeline(events []replay.Event, gevs []event.Event, reports []acpguard.TurnReport, epoch time.Time) ([]reportTurn, []reportRow) {
	turns := make([]reportTurn, len(reports))
	byKey := map[string][]int{} // turn key → turn numbers, in order
	for i, r := range reports {
		t := reportTurn{N: i + 1, RequestID: string(r.RequestID), Session: r.SessionID, Outcome: string(r.Outcome),
			Silent: r.Silent, StopReason: r.StopReason, Attempts: r.Attempts, Suppressed: r.Suppressed, StartMs: -1}
		if pe := r.ProviderError; pe != nil {
			t.Code, t.Class, t.Rule, t.Confidence, t.Excerpt = pe.Code, pe.Class, pe.Rule, pe.Confidence, oneLine(pe.SafeExcerpt, 300)
		}
		if d := r.Decision; d != nil {
			t.Decision = decisionText(*d)
		}
		turns[i] = t
		k := turnKey(r.SessionID, r.RequestID)
		byKey[k] = append(byKey[k], i+1)
	}
	ms := func(at time.Time) int64 { return max(at.Sub(epoch).Milliseconds(), 0) }
	// The guard's events name their turn by session and request id; a
	// turn is the first of its key not yet answered.
	answered := map[string]int{}
	turnOf := func(b event.EventBase) int {
		if b.RequestID == nil {
			return 0
		}
		k := turnKey(b.SessionID, b.RequestID)
		ns := byKey[k]
		if i := answered[k]; i < len(ns) {
			return ns[i]
		}
		if len(ns) > 0 {
			return ns[len(ns)-1]
		}
		return 0
	}
	var grows []reportRow
	for _, e := range gevs {
		b := e.Base()
		n := turnOf(b)
		row, keep := guardRow(e)
		if _, isAns := e.(event.Answered); isAns {
			answered[turnKey(b.SessionID, b.RequestID)]++
		}
		if !keep {
			continue
		}
		row.TMs, row.Turn = ms(b.At), n
		if n > 0 {
			t := &turns[n-1]
			if t.StartMs < 0 || row.TMs < t.StartMs {
				t.StartMs = row.TMs
			}
			t.EndMs = max(t.EndMs, row.TMs)
		}
		grows = append(grows, row)
	}
	for i := range turns {
		turns[i].StartMs = max(turns[i].StartMs, 0)
	}
	// Frames: a session's frames between its prompt and the prompt's
	// answer belong to that turn.
	ft := &frameTurns{turns: turns, open: map[string]int{}, opened: map[int]bool{}}
	var rows []reportRow
	gi := 0
	for _, ev := range events {
		if ev.Dir == replay.DirMeta {
			continue
		}
		for gi < len(grows) && grows[gi].TMs < ev.TMs {
			rows = append(rows, grows[gi])
			gi++
		}
		rows = append(rows, recordedRow(ev, ft))
	}
	rows = append(rows, grows[gi:]...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].TMs < rows[j].TMs })
	return turns, rows
}

// frameHead is what a frame's metadata is read from.
type frameHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate string `json:"sessionUpdate"`
		} `json:"update"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// recordedRow is a transcript event's row: metadata and shape, never text.
func recordedRow(ev replay.Event, ft *frameTurns) reportRow {
	row := reportRow{TMs: ev.TMs, Kind: ev.Dir}
	switch ev.Dir {
	case replay.DirStderr:
		row.What = "stderr line"
		row.Size = len(ev.Text())
		return row
	case replay.DirExit:
		switch {
		case ev.StartError != "":
			row.What = "agent could not start"
		case ev.Signal != "":
			row.What = "agent exited on " + ev.Signal
		case ev.Code != nil:
			row.What = fmt.Sprintf("agent exited with code %d", *ev.Code)
		default:
			row.What = "agent exited"
		}
		return row
	case replay.DirStop:
		row.What = "acp-guard told to stop"
		return row
	case replay.DirAttemptLog:
		row.What = fmt.Sprintf("attempt log record %d", ev.Seq)
		if ev.Err != "" {
			row.What += " not written"
		} else {
			row.What += " written"
		}
		return row
	case replay.DirCatalogue:
		row.What = "classifying with catalogue " + ev.Catalogue
		if ev.Overlay != nil {
			row.What += " (an overlay merged)"
		}
		return row
	case replay.DirC2A, replay.DirA2C:
	default:
		row.What = ev.Dir
		return row
	}
	b := ev.Bytes()
	row.Size = len(b)
	if ev.Via == replay.ViaGuard {
		row.Tags = append(row.Tags, "acp-guard")
	}
	if ev.Suppressed {
		row.Tags = append(row.Tags, "suppressed")
	}
	if !ev.IsJSON() {
		row.What = "not JSON"
		return row
	}
	var h frameHead
	_ = json.Unmarshal(b, &h)
	row.Shape = frameShape(b)
	switch {
	case h.Method != "" && h.ID != nil:
		row.What = "request " + h.Method + " id " + string(h.ID)
	case h.Method != "":
		row.What = h.Method
		if u := h.Params.Update.SessionUpdate; u != "" {
			row.What += " " + u
		}
	case h.Error != nil:
		row.What = "error answer to id " + string(h.ID)
	default:
		row.What = "answer to id " + string(h.ID)
	}
	row.Turn = ft.of(ev, h)
	return row
}

// frameTurns assigns frames to turns: a session's frames from its
// session/prompt to the prompt's answer belong to that turn.
type frameTurns struct {
	turns  []reportTurn
	open   map[string]int // session → the turn open in it
	opened map[int]bool
}

func (ft *frameTurns) of(ev replay.Event, h frameHead) int {
	sess := h.Params.SessionID
	if ev.Dir == replay.DirC2A && h.Method == "session/prompt" {
		for i, t := range ft.turns {
			if t.Session == sess && t.RequestID == string(h.ID) && !ft.opened[i+1] {
				ft.open[sess], ft.opened[i+1] = i+1, true
				break
			}
		}
	}
	if sess != "" {
		return ft.open[sess]
	}
	if h.Method == "" && ev.Dir == replay.DirA2C && !ev.Suppressed && h.ID != nil {
		for s, n := range ft.open {
			if n > 0 && ft.turns[n-1].RequestID == string(h.ID) {
				delete(ft.open, s)
				return n
			}
		}
	}
	return 0
}

// guardRow is a guard event's row; keep is false for events the page
// does not show.
func guardRow(e event.Event) (row reportRow, keep bool) {
	row.Kind = "guard"
	switch v := e.(type) {
	case event.TurnStarted:
		row.What = fmt.Sprintf("turn started (generation %d)", v.Generation)
		if v.Model != "" {
			row.What += " on model " + v.Model
		}
	case event.FailureClassified:
		row.Kind = "verdict"
		vd := v.Verdict
		row.What = fmt.Sprintf("%s failure classified %s (%s) rule %s, attempt %d", v.Phase, vd.Code, vd.Class, orNone(vd.Rule), v.Attempt)
		if v.Phase == "prompt" {
			row.What += "; decided: " + decisionText(v.Decision)
		}
		row.Shape = oneLine(vd.SafeExcerpt, 300)
	case event.Transition:
		row.Kind = "decision"
		row.What = fmt.Sprintf("%s --%s--> %s: %s", v.From, v.On, v.To, decisionText(v.Decision))
		if v.By != "" {
			row.What += " (by " + v.By + ")"
		}
	case event.RecoveryAction:
		row.Kind = "decision"
		row.What = fmt.Sprintf("%s asked by %s", v.Action, v.By)
		if v.Refused != "" {
			row.What += ", refused: " + v.Refused
		} else {
			row.What += fmt.Sprintf(": %s → %s", v.From, v.To)
		}
	case event.AttemptSent:
		row.What = fmt.Sprintf("sent %s %s (attempt %d)", v.Kind, v.Method, v.Attempt)
	case event.AttemptDone:
		row.What = fmt.Sprintf("%s %s answered, ok %v", v.Kind, v.Method, v.OK)
		if v.NotSent != "" {
			row.What = fmt.Sprintf("%s %s not sent: %s", v.Kind, v.Method, v.NotSent)
		}
	case event.NoticeSent:
		row.What = fmt.Sprintf("notice %s (%s %s)", v.Action, v.Code, v.Class)
	case event.Answered:
		row.What = "answered: " + string(v.Report.Outcome)
	case event.SilentFlagged:
		row.Kind = "silent"
		row.What = fmt.Sprintf("flagged silent: %v", v.Silent)
	case event.AbnormalStop:
		row.What = "abnormal stop: " + v.StopReason
	case event.CircuitDecision:
		row.Kind = "decision"
		row.What = fmt.Sprintf("circuit %s for %s", v.Decision, v.Key)
	case event.CircuitChanged:
		row.What = fmt.Sprintf("circuit %s: %s", v.Op, v.Circuit.State)
	case event.Stalled:
		row.What = fmt.Sprintf("stalled after %v idle", v.Idle)
	default:
		return row, false
	}
	return row, true
}

// decisionText says a recovery decision in one line.
func decisionText(d acpguard.Decision) string {
	s := d.Action
	if d.Reason != "" {
		s += " (" + d.Reason + ")"
	}
	if d.DelayMs > 0 {
		s += fmt.Sprintf(" after %dms", d.DelayMs)
	}
	if d.MaxRetries > 0 {
		s += fmt.Sprintf(", attempt %d/%d", d.Attempt, d.MaxRetries)
	}
	return s
}

// frameShape is a frame's JSON with every string value replaced by its
// length, except under shapeKeys, compact and bounded to maxFrameShape.
func frameShape(b []byte) string {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return ""
	}
	out, err := json.Marshal(shapeOf("", v))
	if err != nil {
		return ""
	}
	s := string(out)
	if len(s) > maxFrameShape {
		n := maxFrameShape
		for n > 0 && !utf8.RuneStart(s[n]) {
			n-- // cut at a character, not inside one
		}
		s = s[:n] + "…"
	}
	return s
}

func shapeOf(key string, v any) any {
	switch x := v.(type) {
	case string:
		if shapeKeys[key] && len(x) <= 64 {
			return x
		}
		return fmt.Sprintf("‹%d chars›", len([]rune(x)))
	case map[string]any:
		for k, e := range x {
			x[k] = shapeOf(k, e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = shapeOf(key, e)
		}
		return x
	}
	return v
}
