package policy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/internal/safefile"
)

// LogFileName is the attempt log's file name inside the state directory.
const LogFileName = "attempts.jsonl"

// Permissions of the state directory and the attempt log.
const (
	StateDirMode = safefile.DirMode
	LogFileMode  = safefile.FileMode
)

// AttemptOutcome is what became of one recorded attempt or decision.
type AttemptOutcome string

const (
	AttemptScheduled AttemptOutcome = "scheduled" // a retry or wait was armed
	AttemptSucceeded AttemptOutcome = "succeeded" // the attempt completed without a provider failure
	AttemptFailed    AttemptOutcome = "failed"    // the attempt failed with a provider failure
	AttemptCancelled AttemptOutcome = "cancelled" // the client cancelled while a retry or wait was pending
	AttemptStopped   AttemptOutcome = "stopped"   // recovery ended: stop, skip with no candidate, or exhausted
	AttemptFlagged   AttemptOutcome = "flagged"   // a success flagged as a silent failure or an abnormal stop
)

// Record is one line of the attempt log. Records are only ever appended: a
// later record may supersede an earlier one (a scheduled retry that then
// succeeded), but never rewrites it.
type Record struct {
	Time             time.Time      `json:"time"` // UTC, RFC 3339 with nanoseconds
	SessionID        string         `json:"sessionId"`
	RequestID        string         `json:"requestId"` // the client's JSON-RPC id as raw JSON text: 7 or "abc"
	Generation       int64          `json:"generation"`
	Attempt          int            `json:"attempt"`         // 0 for the original prompt, then 1, 2, …
	Model            string         `json:"model,omitempty"` // the model the attempt ran on, when known
	Code             string         `json:"code,omitempty"`
	Class            string         `json:"class,omitempty"`
	Rule             string         `json:"rule,omitempty"`
	CatalogueVersion string         `json:"catalogueVersion,omitempty"`
	Decision         Decision       `json:"decision"`
	Policy           Document       `json:"policy"` // snapshot at decision time
	Outcome          AttemptOutcome `json:"outcome"`
	Silent           string         `json:"silent,omitempty"` // the silent-failure kind of a flagged success
	// By names who asked for the decision when it was an action on a
	// held prompt (retry_now, skip_now, stop_now): "client" (the
	// _acp-guard/recovery request) or "operator" (acp-guard held).
	By string `json:"by,omitempty"`
}

// Log is an append-only attempt log, safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

// OpenLog opens (creating as needed) dir/attempts.jsonl for appending,
// through internal/safefile: directories it creates get mode 0700 and dir
// must not be a symbolic link; the file is 0600 (an existing file with wider
// permission bits is narrowed) and a symbolic link in its place is refused.
// When the file does not end in '\n' (a record torn by a crash), a newline
// is written first, so the next record starts on a fresh line and only the
// torn one is lost (ReadLog skips and reports it).
func OpenLog(dir string) (*Log, error) {
	if dir == "" {
		return nil, errors.New("attempt log: empty state directory")
	}
	if err := safefile.MkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("attempt log: state directory: %w", err)
	}
	path := filepath.Join(dir, LogFileName)
	f, err := safefile.Open(path, safefile.Append)
	if err != nil {
		return nil, fmt.Errorf("attempt log: %w", err)
	}
	if err := freshLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("attempt log: %s: %w", path, err)
	}
	return &Log{f: f, path: path}, nil
}

// freshLine ends a torn last record with a newline.
func freshLine(f *os.File) error {
	ok, err := safefile.EndsInNewline(f)
	if err == nil && !ok {
		_, err = f.Write([]byte{'\n'})
	}
	return err
}

// Path returns the log file's path.
func (l *Log) Path() string { return l.path }

// Append writes rec as one JSON line and syncs it to disk, so that a
// decision is durable before the work it schedules. Times are stored in UTC.
func (l *Log) Append(rec Record) error {
	rec.Time = rec.Time.UTC()
	if !rec.Decision.Deadline.IsZero() {
		rec.Decision.Deadline = rec.Decision.Deadline.UTC()
	}
	if rec.Decision.DelayMs == 0 && rec.Decision.Delay > 0 {
		rec.Decision.DelayMs = millis(rec.Decision.Delay)
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("attempt log: encoding record: %w", err)
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("attempt log: closed")
	}
	if _, err := l.f.Write(line); err != nil {
		return fmt.Errorf("attempt log: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("attempt log: %w", err)
	}
	return nil
}

// Close closes the log. Appending after Close fails.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// MaxRecordBytes bounds one line of the attempt log when reading; a longer
// line is skipped (records are a few KiB).
const MaxRecordBytes = 1 << 20

// Skipped is a line of the attempt log that ReadLog could not read: a record
// torn by a crash, or one a pre-fix writer glued to it.
type Skipped struct {
	Line   int    // 1-based line number
	Reason string // why it was skipped, e.g. "torn record (no newline)"
}

func (s Skipped) String() string { return fmt.Sprintf("line %d: %s", s.Line, s.Reason) }

// ReadLog reads the records of session (all records when session is "")
// from an attempt log. A line that is not a whole record — torn by a crash,
// corrupt, or longer than MaxRecordBytes — is skipped and reported in
// skipped, so one bad write never makes the log unreadable. err is only a
// read failure.
func ReadLog(r io.Reader, session string) (recs []Record, skipped []Skipped, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, long, complete, rerr := readRecordLine(br)
		if rerr != nil {
			return recs, skipped, fmt.Errorf("attempt log: %w", rerr)
		}
		switch {
		case long:
			skipped = append(skipped, Skipped{n, fmt.Sprintf("longer than %d bytes", MaxRecordBytes)})
		case len(bytes.TrimSpace(line)) > 0:
			var rec Record
			if uerr := json.Unmarshal(line, &rec); uerr != nil {
				reason := "not a record: " + uerr.Error()
				if !complete {
					reason = "torn record (no newline at the end of the log)"
				}
				skipped = append(skipped, Skipped{n, reason})
				break
			}
			rec.Decision.Delay = time.Duration(rec.Decision.DelayMs) * time.Millisecond
			if session == "" || rec.SessionID == session {
				recs = append(recs, rec)
			}
		}
		if !complete {
			return recs, skipped, nil
		}
	}
}

// readRecordLine reads one line, keeping at most MaxRecordBytes of it;
// complete is false at the end of the input.
func readRecordLine(br *bufio.Reader) (line []byte, long, complete bool, err error) {
	for {
		chunk, rerr := br.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > MaxRecordBytes+1 {
				long, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch rerr {
		case nil:
			return line, long, true, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			return line, long, false, nil
		default:
			return nil, false, false, rerr
		}
	}
}

// DefaultStateDir returns $XDG_STATE_HOME/acp-guard when XDG_STATE_HOME is
// an absolute path, else acp-guard under the OS's state folder:
// ~/.local/state on Linux, os.UserCacheDir elsewhere (~/Library/Caches on
// macOS, %LocalAppData% on Windows; platform.StateHome).
func DefaultStateDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "acp-guard"), nil
	}
	home, err := platform.StateHome()
	if err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	return filepath.Join(home, "acp-guard"), nil
}
