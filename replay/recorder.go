package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/acp-guard/acp-guard/internal/safefile"
)

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	// Redact rewrites text to hide secrets (the proxy passes the
	// classifier's sanitizer). It is applied to each frame line, stderr line
	// and argv element. Nil records without redaction.
	Redact func(string) string
	// RedactFrame, if set, replaces Redact for protocol frames: the proxy
	// passes classify.RedactFrame there (secrets, emails and account ids
	// go), so session ids, paths and URLs in frames stay intact and the
	// recording still replays.
	RedactFrame func(string) string
	// RecordRaw turns redaction off even when Redact is set (--record-raw).
	RecordRaw bool
	// Logger receives the one warning about a write failure. Nil discards.
	Logger *slog.Logger
	// Overwrite lets OpenRecorder replace an existing file
	// (--record-overwrite); without it an existing file is refused.
	Overwrite bool
}

// Recorder writes a transcript. A write failure is logged once, after which
// the Recorder drops every event: recording never fails or stops the relay.
// It is not safe for concurrent use; the proxy calls it from its one event
// loop.
type Recorder struct {
	w       *bufio.Writer
	closer  io.Closer
	opts    RecorderOptions
	log     *slog.Logger
	scratch []byte
	err     error // first failure; the Recorder is inert once set
}

// OpenRecorder creates the transcript file at path with mode 0600 through
// internal/safefile: a symbolic link at path is refused, no directory is
// created, and an existing file is refused unless opts.Overwrite is set
// (then it is truncated and narrowed to 0600). A transcript holds exactly
// one session, so there is no appending.
func OpenRecorder(path string, opts RecorderOptions) (*Recorder, error) {
	how := safefile.New
	if opts.Overwrite {
		how = safefile.Truncate
	}
	f, err := safefile.Open(path, how)
	var ee *safefile.ExistsError
	if errors.As(err, &ee) {
		return nil, fmt.Errorf("replay: transcript %s already exists (choose another name, or overwrite it on purpose): %w", path, ee)
	}
	if err != nil {
		return nil, fmt.Errorf("replay: opening transcript: %w", err)
	}
	r := NewRecorder(f, opts)
	r.closer = f
	return r, nil
}

// NewRecorder returns a Recorder writing to w. Close flushes but does not
// close w.
func NewRecorder(w io.Writer, opts RecorderOptions) *Recorder {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{w: bufio.NewWriterSize(w, 64<<10), opts: opts, log: log}
}

// MetaInfo is what the meta event says about the recorded run.
type MetaInfo struct {
	Argv      []string // the agent command line (redacted when recording redacts)
	Adapter   string
	Version   string          // acp-guard's version
	Catalogue string          // the catalogue version
	Policy    json.RawMessage // the effective policy document, compact JSON; nil: none
	Fallback  []string        // --fallback-models
	// Start is when the recording started (t_ms counts from it).
	Start time.Time
	// Notices, StallTimeout, Circuits and CircuitNamespace are the rest of
	// the configuration a replay needs to decide as the recording did
	// (see Event).
	Notices          string
	StallTimeout     time.Duration
	Circuits         string
	CircuitNamespace string
	CircuitHolder    string
	AttemptLog       string
	// JitterSeed is the seed of the proxy's retry jitter (0: none).
	JitterSeed uint64
}

// Meta records the meta event; call it first.
func (r *Recorder) Meta(m MetaInfo) {
	if r.err != nil {
		return
	}
	red := make([]string, len(m.Argv))
	for i, a := range m.Argv {
		red[i] = r.redact(a)
	}
	var pol json.RawMessage
	if len(m.Policy) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, m.Policy); err == nil {
			pol = b.Bytes()
		}
	}
	r.write(Event{Dir: DirMeta, Argv: red, Adapter: m.Adapter, Version: m.Version, Catalogue: m.Catalogue, Policy: pol, Fallback: m.Fallback,
		Start: m.Start, Notices: m.Notices, StallTimeoutMs: m.StallTimeout.Milliseconds(), Circuits: m.Circuits, CircuitNamespace: m.CircuitNamespace, CircuitHolder: m.CircuitHolder, AttemptLog: m.AttemptLog,
		JitterSeed: m.JitterSeed})
}

// Catalogue records that the proxy classifies with catalogue version
// from the turn-th session/prompt on (0: from the start), the base
// catalogue merged with overlay (a JSON document, compacted here; nil:
// the base alone). The overlay is operator-written rules and fixtures,
// not provider text: it is recorded as it is, so that a replay merges the
// same rules.
func (r *Recorder) Catalogue(tMs int64, turn int, version string, overlay []byte) {
	if r.err != nil {
		return
	}
	var ov json.RawMessage
	if overlay != nil {
		var b bytes.Buffer
		if err := json.Compact(&b, overlay); err != nil {
			return
		}
		ov = b.Bytes()
	}
	r.write(Event{TMs: tMs, Dir: DirCatalogue, Turn: turn, Catalogue: version, Overlay: ov})
}

// StartFailed records that the agent could not be started (code 127: not
// found, 126: not executable), and why, and flushes.
func (r *Recorder) StartFailed(tMs int64, code int, err error) {
	if r.err != nil {
		return
	}
	r.write(Event{TMs: tMs, Dir: DirExit, Code: &code, StartError: r.redact(err.Error())})
	r.Flush()
}

// Stop records that acp-guard was told to stop (a signal).
func (r *Recorder) Stop(tMs int64) {
	if r.err != nil {
		return
	}
	r.write(Event{TMs: tMs, Dir: DirStop})
}

// AttemptLogged records that the proxy learned the result of the seq-th
// attempt record of the session (from 1): written (err nil), or not, and
// why (redacted when recording redacts).
func (r *Recorder) AttemptLogged(tMs int64, seq int, err error) {
	if r.err != nil {
		return
	}
	ev := Event{TMs: tMs, Dir: DirAttemptLog, Seq: seq}
	if err != nil {
		ev.Err = r.redact(err.Error())
	}
	r.write(ev)
}

// Frame records one frame that crossed the proxy in direction dir (DirC2A or
// DirA2C). line is the frame with or without its line ending; a trailing
// "\r\n" is noted as crlf. via is "" for a frame the peer sent or ViaGuard for
// one the proxy emitted or rewrote; suppressed marks an original frame that
// the proxy did not forward. line is not retained.
func (r *Recorder) Frame(tMs int64, dir string, line []byte, via string, suppressed bool) {
	if r.err != nil {
		return
	}
	if dir != DirC2A && dir != DirA2C {
		r.log.Error("replay: frame with bad direction dropped", "dir", dir)
		return
	}
	ev := Event{TMs: tMs, Dir: dir, Via: via, Suppressed: suppressed}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	if n := len(line); n > 0 && line[n-1] == '\r' {
		ev.CRLF = true
		line = line[:n-1]
	}
	if r.redacting() {
		redact := r.opts.Redact
		if r.opts.RedactFrame != nil {
			redact = r.opts.RedactFrame
		}
		s := string(line)
		if red := redact(s); red != s {
			line = []byte(red)
		}
	}
	// Embed a valid JSON frame as is. JSON with white space around it keeps
	// the exact text in raw as well; a frame containing "\n" (only possible
	// when Redact put it there) cannot be embedded.
	trimmed := bytes.TrimSpace(line)
	switch {
	case bytes.IndexByte(line, '\n') < 0 && json.Valid(line):
		ev.Msg = trimmed
		if len(trimmed) != len(line) {
			raw := string(line)
			ev.Raw = &raw
		}
	default:
		raw := string(line)
		ev.Raw = &raw
	}
	r.write(ev)
}

// Stderr records one line of the agent's stderr (with or without its line
// ending).
func (r *Recorder) Stderr(tMs int64, line []byte) {
	if r.err != nil {
		return
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	r.write(StderrEvent(tMs, r.redact(string(line))))
}

// Exit records the agent's exit and flushes. signal is "" unless a signal
// killed the agent.
func (r *Recorder) Exit(tMs int64, code int, signal string) { r.exit(tMs, code, signal, false) }

// ExitAfterClientClosed records the agent's exit like Exit, marking that
// the client had closed its input before it (client_closed): Serve then
// plays the exit only once its own client has closed its input.
func (r *Recorder) ExitAfterClientClosed(tMs int64, code int, signal string) {
	r.exit(tMs, code, signal, true)
}

func (r *Recorder) exit(tMs int64, code int, signal string, clientClosed bool) {
	if r.err != nil {
		return
	}
	r.write(Event{TMs: tMs, Dir: DirExit, Code: &code, Signal: signal, ClientClosed: clientClosed})
	r.Flush()
}

// Flush writes buffered events out.
func (r *Recorder) Flush() {
	if r.err != nil {
		return
	}
	if err := r.w.Flush(); err != nil {
		r.fail(err)
	}
}

// Close flushes and closes the file OpenRecorder opened. It returns an error
// only when closing fails; write failures were logged already.
func (r *Recorder) Close() error {
	r.Flush()
	if r.err == nil {
		r.err = errClosed
	}
	if r.closer == nil {
		return nil
	}
	c := r.closer
	r.closer = nil
	if err := c.Close(); err != nil {
		return fmt.Errorf("replay: closing transcript: %w", err)
	}
	return nil
}

// Err returns the failure that made the Recorder inert, or nil.
func (r *Recorder) Err() error {
	if r.err == errClosed {
		return nil
	}
	return r.err
}

var errClosed = errors.New("replay: recorder closed")

func (r *Recorder) redacting() bool { return r.opts.Redact != nil && !r.opts.RecordRaw }

func (r *Recorder) redact(s string) string {
	if !r.redacting() {
		return s
	}
	return r.opts.Redact(s)
}

func (r *Recorder) write(ev Event) {
	r.scratch = ev.appendJSON(r.scratch[:0])
	r.scratch = append(r.scratch, '\n')
	if _, err := r.w.Write(r.scratch); err != nil {
		r.fail(err)
	}
	if cap(r.scratch) > 1<<20 {
		r.scratch = nil
	}
}

func (r *Recorder) fail(err error) {
	r.err = err
	r.log.Warn("replay: transcript write failed; recording stopped", "err", err)
}
