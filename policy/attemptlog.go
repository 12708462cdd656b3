package policy

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
	"sync"
	"time"
)

// LogFileName is the attempt log's file name inside the state directory.
const LogFileName = "attempts.jsonl"

// Permissions of the state directory and the attempt log.
const (
	StateDirMode fs.FileMode = 0o700
	LogFileMode  fs.FileMode = 0o600
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
	Attempt          int            `json:"attempt"` // 0 for the original prompt, then 1, 2, …
	Code             string         `json:"code,omitempty"`
	Class            string         `json:"class,omitempty"`
	Rule             string         `json:"rule,omitempty"`
	CatalogueVersion string         `json:"catalogueVersion,omitempty"`
	Decision         Decision       `json:"decision"`
	Policy           Document       `json:"policy"` // snapshot at decision time
	Outcome          AttemptOutcome `json:"outcome"`
	Silent           string         `json:"silent,omitempty"` // the silent-failure kind of a flagged success
}

// Log is an append-only attempt log, safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

// OpenLog opens (creating as needed) dir/attempts.jsonl for appending.
// Directories it creates get mode 0700; the file is 0600, and an existing
// file with wider permission bits is narrowed to 0600. An existing dir is
// used as it is.
func OpenLog(dir string) (*Log, error) {
	if dir == "" {
		return nil, errors.New("attempt log: empty state directory")
	}
	if err := mkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("attempt log: creating state directory: %w", err)
	}
	path := filepath.Join(dir, LogFileName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, LogFileMode)
	if err != nil {
		return nil, fmt.Errorf("attempt log: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	if err == nil && fi.Mode().Perm() != LogFileMode {
		err = f.Chmod(LogFileMode)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("attempt log: %w", err)
	}
	return &Log{f: f, path: path}, nil
}

// mkdirPrivate creates dir and any missing parents with mode 0700 exactly
// (regardless of umask), leaving existing directories alone.
func mkdirPrivate(dir string) error {
	dir = filepath.Clean(dir)
	var missing []string
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s is not a directory", p)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		if err := os.Mkdir(p, StateDirMode); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue // created concurrently by someone else: not ours to chmod
			}
			return err
		}
		if err := os.Chmod(p, StateDirMode); err != nil {
			return err
		}
	}
	return nil
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

// ReadLog reads the records of session (all records when session is "")
// from an attempt log. A last line without a newline that does not parse
// (a write cut short by a crash) is ignored; any other bad line is an error
// naming its line number.
func ReadLog(r io.Reader, session string) ([]Record, error) {
	br := bufio.NewReader(r)
	var recs []Record
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return recs, fmt.Errorf("attempt log: %w", err)
		}
		complete := err == nil
		if len(bytes.TrimSpace(line)) > 0 {
			var rec Record
			if uerr := json.Unmarshal(line, &rec); uerr != nil {
				if !complete {
					return recs, nil // truncated last line
				}
				return recs, fmt.Errorf("attempt log: line %d: %w", n, uerr)
			}
			rec.Decision.Delay = time.Duration(rec.Decision.DelayMs) * time.Millisecond
			if session == "" || rec.SessionID == session {
				recs = append(recs, rec)
			}
		}
		if !complete {
			return recs, nil
		}
	}
}

// DefaultStateDir returns $XDG_STATE_HOME/acp-guard when XDG_STATE_HOME is
// an absolute path, else ~/.local/state/acp-guard.
func DefaultStateDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "acp-guard"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "acp-guard"), nil
}
