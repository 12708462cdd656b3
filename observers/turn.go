package observers

import (
	"strings"
	"time"
	"unicode"

	"github.com/acp-guard/acp-guard/classify"
)

// Evidence is what one prompt turn showed, bounded: flags and counts.
type Evidence struct {
	AssistantOutput bool `json:"assistantOutput"`
	Thoughts        bool `json:"thoughts"`
	ToolActivity    bool `json:"toolActivity"` // a new tool_call was seen
	ToolCalls       int  `json:"-"`
	ToolUpdates     int  `json:"-"`
	Effects         int  `json:"-"` // agent→client effect requests
	Requests        int  `json:"-"` // agent→client requests of any kind
	Unparseable     int  `json:"-"` // stdout lines that were not JSON (or too long)
	Cancelled       bool `json:"-"`
	Suppressed      int  `json:"-"` // control chunks suppressed
	Diagnostics     int  `json:"-"` // retry notes (and other diagnostics) in assistant text: forwarded, not output
	StderrNotes     int  `json:"-"` // retry notes on stderr while the turn was open
	// ErrorLine: the turn's visible text so far may be one error line
	// (report.go); it is not output until the guard decides.
	ErrorLine bool `json:"-"`
	// LateOutput counts non-blank message and thought chunks for the
	// session after the turn's prompt returned (and before the next
	// prompt): text that belongs to no prompt.
	LateOutput int  `json:"-"`
	Exited     bool `json:"-"` // the agent died during the turn
}

// Turn is one prompt attempt of a session (the client's prompt, or a
// retry the proxy sent on its behalf).
type Turn struct {
	SessionID  string
	Generation int64
	Started    time.Time
	Evidence   Evidence
	// Marker is the control signature whose match is pending (nil: none).
	Marker *ControlSignature
	// MarkerSuffix is the matched chunk's text after the prefix (at most
	// the signature's MaxSuffix bytes); it is untrusted provider text, to
	// be sanitized before it goes anywhere.
	MarkerSuffix string
	// MarkerText is the matched chunk's whole text, trimmed (bounded by
	// WindowBytes): what ClassifyText signatures are classified from.
	MarkerText string
	// StatedRetries is how many retries the agent said it made in the
	// error it reported ("retried 5 times"); the guard sets it.
	StatedRetries int
	// StopReason is the result's stopReason, once the prompt returned.
	StopReason string
	Returned   bool
	stderr     []stderrLine // noise.go
	shapes     *shapeTable  // the tracker's stderr shapes
	repeat     repeatState
	text       errorLineState // report.go
	reported   string         // the settled error line (ReportedText)
	lastNote   string         // the latest retry note in assistant text (an ACP diagnostic), trimmed
	endNotes   int            // notes that close a retry loop ("Retry finished, resuming.")
	// Frames counts the agent's frames for the turn (updates, requests)
	// and last is what came last: the stall watchdog's evidence.
	Frames      uint32
	lastKind    UpdateKind
	lastRequest string
}

// LastFrame names what the agent sent last in the turn.
func (t *Turn) LastFrame() string {
	switch {
	case t.Frames == 0:
		return "nothing"
	case t.lastRequest != "":
		return t.lastRequest
	}
	return kindNames[t.lastKind]
}

var kindNames = [...]string{UpdateOther: "session_update", UpdateMessage: "agent_message_chunk", UpdateThought: "agent_thought_chunk",
	UpdateToolCall: "tool_call", UpdateToolCallUpdate: "tool_call_update", UpdatePlan: "plan"}

const maxTurnStderr = 20

// Stderr returns the stderr lines that arrived during the turn (bounded:
// the last few), noise left out; StderrNear is what may be evidence.
func (t *Turn) Stderr() []string {
	out := make([]string, len(t.stderr))
	for i, l := range t.stderr {
		out[i] = l.text
	}
	return out
}

// AgentRetries is the count of the agent's own visible retries in the
// turn: the most of its retry notes in assistant text, its retry notes on
// stderr, the restatements of its opening text (an answer re-streamed
// from the start), and the retries it stated in its error.
func (t *Turn) AgentRetries() int {
	return max(t.Evidence.Diagnostics-t.endNotes, t.Evidence.StderrNotes, int(t.repeat.times), t.StatedRetries)
}

// ReplaySafe is the effect-safety gate on the evidence alone: no assistant
// output, no thought, no tool call, no effect request, no unparseable
// line, no cancel, and the agent still alive.
func (t *Turn) ReplaySafe() bool {
	e := t.Evidence
	return !e.AssistantOutput && !e.Thoughts && !e.ToolActivity && e.ToolUpdates == 0 &&
		e.Effects == 0 && e.Unparseable == 0 && !e.Cancelled && !e.Exited
}

// session tracks one ACP session.
type session struct {
	id         string // its key in Tracker.sessions
	generation int64
	active     *Turn
}

// Tracker owns the per-session turn state. It is not safe for concurrent
// use: the relay's hooks call it one at a time, under the relay's mutex.
type Tracker struct {
	Adapter    string
	Signatures []ControlSignature
	sessions   map[string]*session
	// last is the session activeRaw found last: a stream's frames name the
	// same session, and comparing its id costs less than hashing it.
	// Sessions are never removed, so it cannot go stale.
	last   *session
	cache  layoutCache
	shapes shapeTable // stderr line shapes (noise.go)

	// LastKind is the kind of the latest session/update Observe saw.
	LastKind UpdateKind
}

// NewTracker returns a tracker for adapter with the given signatures.
func NewTracker(adapter string, sigs []ControlSignature) *Tracker {
	return &Tracker{Adapter: adapter, Signatures: sigs, sessions: make(map[string]*session)}
}

func (tr *Tracker) session(id string) *session {
	s := tr.sessions[id]
	if s == nil {
		s = &session{id: id}
		tr.sessions[id] = s
	}
	return s
}

// Start begins a new prompt generation for the session and returns its turn.
func (tr *Tracker) Start(sessionID string, now time.Time) *Turn {
	s := tr.session(sessionID)
	s.generation++
	t := &Turn{SessionID: sessionID, Generation: s.generation, Started: now, shapes: &tr.shapes}
	s.active = t
	return t
}

// Active returns the session's active turn, or nil.
func (tr *Tracker) Active(sessionID string) *Turn {
	if s := tr.sessions[sessionID]; s != nil {
		return s.active
	}
	return nil
}

// Current reports whether t is its session's active generation.
func (tr *Tracker) Current(t *Turn) bool {
	s := tr.sessions[t.SessionID]
	return s != nil && s.active == t && s.generation == t.Generation
}

// Generation returns the session's latest generation.
func (tr *Tracker) Generation(sessionID string) int64 {
	if s := tr.sessions[sessionID]; s != nil {
		return s.generation
	}
	return 0
}

// Return records that the turn's session/prompt returned; the turn stays
// active (late updates still count against it) until the next Start.
func (tr *Tracker) Return(t *Turn, stopReason string) {
	t.Returned = true
	t.StopReason = stopReason
}

// UpdateKind is the kind of a session/update, as far as evidence goes.
type UpdateKind uint8

const (
	UpdateOther UpdateKind = iota
	UpdateMessage
	UpdateThought
	UpdateToolCall
	UpdateToolCallUpdate
	UpdatePlan
)

// KindOf maps the sessionUpdate discriminator to an UpdateKind.
func KindOf(sessionUpdate string) UpdateKind { return kindOf([]byte(sessionUpdate)) }

// kindOf is the one mapping from a sessionUpdate discriminator (unquoted)
// to an UpdateKind; it does not allocate.
func kindOf(name []byte) UpdateKind {
	switch string(name) {
	case "agent_message_chunk":
		return UpdateMessage
	case "agent_thought_chunk":
		return UpdateThought
	case "tool_call":
		return UpdateToolCall
	case "tool_call_update":
		return UpdateToolCallUpdate
	case "plan":
		return UpdatePlan
	}
	return UpdateOther
}

// Update observes one session/update for sessionID and reports whether the
// frame must be suppressed. text is the decoded start of a text chunk
// (complete: it is the whole text); empty is true for a chunk without
// text content. Updates for a session with no active turn (between
// prompts, or for a stale generation) are evidence of nothing and never
// match a signature.
func (tr *Tracker) Update(sessionID string, kind UpdateKind, text string, complete, nonEmpty bool) (suppress bool) {
	t := tr.Active(sessionID)
	if t == nil {
		return false
	}
	return tr.update(t, kind, text, complete, nonEmpty)
}

func (tr *Tracker) update(t *Turn, kind UpdateKind, text string, complete, nonEmpty bool) (suppress bool) {
	if t.Generation == 0 {
		return false
	}
	switch kind {
	case UpdateMessage:
		if !nonEmpty {
			return false
		}
		if t.Returned {
			t.Evidence.LateOutput++
			t.Evidence.AssistantOutput = true
			t.Marker = nil
			return false
		}
		for i := range tr.Signatures {
			sig := &tr.Signatures[i]
			if text != "" && sig.Match(tr.Adapter, text, complete) {
				if sig.Kind == KindDiagnostic {
					t.Evidence.Diagnostics++
					return false // forwarded; not output, marker kept
				}
				t.Marker = sig
				t.MarkerSuffix = sig.Suffix(text)
				t.MarkerText = strings.TrimFunc(text, unicode.IsSpace)
				t.Evidence.Suppressed++
				return true
			}
		}
		if complete && text != "" {
			if n, ok := classify.ParseNote(text); ok {
				// The agent's own retry note: a diagnostic, forwarded;
				// neither output nor a clearing event.
				t.Evidence.Diagnostics++
				if n.End {
					t.endNotes++ // closes the loop: not a retry
				} else {
					t.lastNote = n.Text
				}
				return false
			}
		}
		t.Marker = nil // the agent resumed its own attempt
		if t.text.closed || !t.takeErrorLine(text, complete) {
			t.Evidence.AssistantOutput = true
		}
	case UpdateThought:
		if nonEmpty {
			if t.Returned {
				t.Evidence.LateOutput++
			}
			t.Evidence.Thoughts = true
			t.Marker = nil
		}
	case UpdateToolCall:
		t.Evidence.ToolCalls++
		t.Evidence.ToolActivity = true
		t.Marker = nil
	case UpdateToolCallUpdate:
		// An in-flight tool's update proves no renewed generation: the
		// marker stays (spec: such updates arrive during error settlement).
		t.Evidence.ToolUpdates++
	case UpdatePlan:
		t.Evidence.AssistantOutput = true
	}
	return false
}

// EffectMethods are agent→client requests that act on the world (or ask
// the user to): a turn that made one is never replayed.
var EffectMethods = map[string]bool{
	"fs/write_text_file":         true,
	"terminal/create":            true,
	"terminal/kill":              true,
	"terminal/output":            true,
	"terminal/release":           true,
	"terminal/wait_for_exit":     true,
	"session/request_permission": true,
}

// IsEffect reports whether an agent→client request method is an effect.
func IsEffect(method string) bool {
	if EffectMethods[method] {
		return true
	}
	return len(method) > 9 && method[:9] == "terminal/"
}

// Effect records an agent→client request in the session's active turn.
func (tr *Tracker) Effect(sessionID, method string) {
	if t := tr.Active(sessionID); t != nil && !t.Returned {
		t.Evidence.Requests++
		t.Frames++
		t.lastRequest = method
	}
	if !IsEffect(method) {
		return
	}
	if t := tr.Active(sessionID); t != nil {
		t.Evidence.Effects++
	} else if sessionID == "" {
		tr.each(func(t *Turn) { t.Evidence.Effects++ })
	}
}

// Cancel records a client session/cancel.
func (tr *Tracker) Cancel(sessionID string) {
	if t := tr.Active(sessionID); t != nil && !t.Returned {
		t.Evidence.Cancelled = true
	}
}

// Unparseable records a stdout line that could not be attributed to a
// session: every open turn is marked, failing closed.
func (tr *Tracker) Unparseable() {
	tr.each(func(t *Turn) { t.Evidence.Unparseable++ })
}

// Stderr records a stderr line, read by the event stamped now, in every
// open turn (bounded); a retry note on stderr is counted as one of the
// agent's retries (classify.ParseNote on the line's first MaxNoteBytes,
// escape sequences removed). A stderr note is not an ACP diagnostic: the
// client never saw it, so it is never weighed against the failure
// (LastNote). A line naming background work (noise.go) is neither kept
// nor a note; every line's shape is counted.
func (tr *Tracker) Stderr(line string, now time.Time) {
	shape := lineShape(line)
	tr.shapes.see(shape, now)
	if backgroundWork(line) {
		return
	}
	note := false
	head := line
	if len(head) > 4*classify.MaxNoteBytes {
		head = head[:4*classify.MaxNoteBytes]
	}
	if classify.MayBeNote([]byte(head)) {
		head = classify.StripANSI(head)
		if len(head) > classify.MaxNoteBytes {
			head = strings.ToValidUTF8(head[:classify.MaxNoteBytes], "")
		}
		n, ok := classify.ParseNote(head)
		note = ok && !n.End
	}
	tr.each(func(t *Turn) {
		if note {
			t.Evidence.StderrNotes++
		}
		if len(t.stderr) == maxTurnStderr {
			copy(t.stderr, t.stderr[1:])
			t.stderr = t.stderr[:maxTurnStderr-1]
		}
		t.stderr = append(t.stderr, stderrLine{text: line, at: now, shape: shape})
	})
}

// Exit records that the agent died; open turns are marked.
func (tr *Tracker) Exit() {
	tr.each(func(t *Turn) { t.Evidence.Exited = true })
}

// each calls fn for every turn whose prompt has not returned yet.
func (tr *Tracker) each(fn func(*Turn)) {
	for _, s := range tr.sessions {
		if s.active != nil && !s.active.Returned {
			fn(s.active)
		}
	}
}
