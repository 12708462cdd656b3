package pipeline

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/replay"
	"github.com/acp-guard/acp-guard/transport"
)

// recorderTap writes the session's transcript (--record): every frame the
// relay sees, stderr, the stop, where the guard learned each attempt
// record's result, the exit. All of them come from the relay's event loop
// but for the exit of an agent that could not start; one mutex orders
// them anyway. Each is written with the time of the event it belongs to
// (transport.StampTap: the stamp the guard decided with), so a replay
// schedules a retry from the same instant the live run did; outside the
// event loop (no stamp yet) it reads the clock. t_ms never goes back.
type recorderTap struct {
	mu     sync.Mutex
	rec    *replay.Recorder
	start  time.Time
	at     time.Time // the stamp of the event being handled (zero: none yet)
	lastMs int64     // the t_ms last written: the floor of the next
	name   *recordName
	// clientClosed is set once the client's input ended (watchEOF), so
	// the recorded exit says whether it followed the client's departure.
	clientClosed atomic.Bool
}

// openRecorder opens cfg.Record and writes the meta event.
func openRecorder(cfg *Options, meta replay.MetaInfo, log *slog.Logger) (*recorderTap, error) {
	start := time.Now()
	name := newRecordName(cfg.Record, start, os.Getpid())
	opts := replay.RecorderOptions{
		Redact: classify.Redact, RedactFrame: classify.RedactFrame, RecordRaw: cfg.RecordRaw, Overwrite: cfg.RecordOverwrite, Logger: log}
	rec, err := replay.OpenRecorder(name.opened, opts)
	// A template never collides: a name taken (two agents started in the
	// same second with {time} alone) gets the next free sequence number.
	for n := 2; err != nil && name.templated() && isExists(err) && n <= maxRecordSeq; n++ {
		name.opened = withSeq(name.first, n)
		rec, err = replay.OpenRecorder(name.opened, opts)
	}
	if err != nil {
		return nil, fieldErr("Record", "", err)
	}
	meta.Start = start
	rec.Meta(meta)
	return &recorderTap{rec: rec, start: start, name: name}, nil
}

// Stamp is transport.StampTap's: the event loop's time for the event
// about to be handled.
func (t *recorderTap) Stamp(at time.Time) {
	t.mu.Lock()
	t.at = at
	t.mu.Unlock()
}

// ms is the current event's time since the start (under mu).
func (t *recorderTap) ms() int64 {
	now := t.at
	if now.IsZero() {
		now = time.Now()
	}
	ms := now.Sub(t.start).Milliseconds()
	if ms < t.lastMs {
		ms = t.lastMs
	}
	t.lastMs = ms
	return ms
}

func (t *recorderTap) Frame(dir transport.Dir, line []byte, via transport.Via, suppressed bool) {
	v := ""
	if via == transport.ViaGuard {
		v = replay.ViaGuard
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rec.Frame(t.ms(), dir.String(), line, v, suppressed)
	if t.name.wantsSession() {
		t.name.observe(line)
	}
}

func (t *recorderTap) Stderr(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rec.Stderr(t.ms(), []byte(line))
}

func (t *recorderTap) Stopping() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rec.Stop(t.ms())
}

func (t *recorderTap) Exit(st transport.ExitStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case st.StartErr != nil:
		t.rec.StartFailed(t.ms(), st.Code, st.StartErr)
	case t.clientClosed.Load():
		t.rec.ExitAfterClientClosed(t.ms(), st.Code, st.Signal)
	default:
		t.rec.Exit(t.ms(), st.Code, st.Signal)
	}
	t.rec.Flush()
}

// attemptLogged is the guard's OnAttemptLogged (on the event loop).
func (t *recorderTap) attemptLogged(seq int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rec.AttemptLogged(t.ms(), seq, err)
}

// catalogue writes that the session classifies with catalogue version
// (the base merged with the overlay doc; nil: the base alone) from the
// turn-th session/prompt on (0: from the start).
func (t *recorderTap) catalogue(turn int, version string, doc []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rec.Catalogue(t.ms(), turn, version, doc)
}

// close flushes and closes the transcript and gives it its final name.
func (t *recorderTap) close(log *slog.Logger) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.rec.Close()
	t.name.finish(log)
	return err
}

// policyJSON is the effective policy document as the meta event holds it.
func policyJSON(doc any) json.RawMessage {
	b, _ := json.Marshal(doc)
	return b
}

// eofWatch notes when the client's input ends. Its one reader is the
// transport's client reader goroutine.
type eofWatch struct {
	r    io.Reader
	done *atomic.Bool
}

func (w *eofWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if err != nil {
		w.done.Store(true)
	}
	return n, err
}

// SyscallConn is the client input's, when it has one: the transport asks
// how many bytes already wait on it, so a stop before the agent started
// answers exactly the requests the client had sent.
func (w *eofWatch) SyscallConn() (platform.RawConn, error) {
	if sc, ok := w.r.(platform.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}
