package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/acp-guard/acp-guard/internal/safefile"
)

// Placeholders of a --record path, for one file per run:
//
//	{pid}      acp-guard's process id
//	{time}     the start time, UTC, as 20260915T120000Z
//	{session}  the first ACP session id of the run (characters other than
//	           [A-Za-z0-9._-] become '_'); until it is known the file is
//	           named with "pending-<pid>" in its place, and it is renamed
//	           when the recording ends (without replacing an existing file)
//
// A path with a placeholder never collides: when the name it expands to
// is taken (two agents started in the same second with {time} alone), the
// next free of "NAME-2.EXT", "NAME-3.EXT", … is used.
const (
	phPID     = "{pid}"
	phTime    = "{time}"
	phSession = "{session}"
)

// expandRecordPath replaces {pid} and {time} in a --record path.
func expandRecordPath(p string, start time.Time, pid int) string {
	p = strings.ReplaceAll(p, phPID, strconv.Itoa(pid))
	return strings.ReplaceAll(p, phTime, start.UTC().Format("20060102T150405Z"))
}

// recordName tracks a --record path: its placeholders, the name the
// recorder writes, and for {session} the final name.
type recordName struct {
	raw     string // as given
	pattern string // {pid} and {time} expanded
	first   string // the first name tried
	opened  string // the path the recorder writes
	session string // the first session id seen, "" until then
}

func newRecordName(p string, start time.Time, pid int) *recordName {
	pattern := expandRecordPath(p, start, pid)
	first := strings.ReplaceAll(pattern, phSession, "pending-"+strconv.Itoa(pid))
	return &recordName{raw: p, pattern: pattern, first: first, opened: first}
}

// maxRecordSeq bounds the sequence numbers tried for a taken name.
const maxRecordSeq = 9999

// templated reports whether the path names a file per run (a
// placeholder): then a name already taken is not an error, the next
// sequence number is tried (a literal path is never changed: an existing
// file is refused unless --record-overwrite).
func (n *recordName) templated() bool {
	return strings.Contains(n.raw, phPID) || strings.Contains(n.raw, phTime) || strings.Contains(n.raw, phSession)
}

// withSeq inserts "-N" before the extension of path's last element
// ("runs/a.jsonl" → "runs/a-2.jsonl").
func withSeq(path string, n int) string {
	dir, base := filepath.Split(path)
	ext := filepath.Ext(base)
	if ext == base {
		ext = "" // ".jsonl" alone is a name, not an extension
	}
	return dir + strings.TrimSuffix(base, ext) + "-" + strconv.Itoa(n) + ext
}

// isExists reports whether err says the file exists.
func isExists(err error) bool {
	var ee *safefile.ExistsError
	return errors.As(err, &ee)
}

// wantsSession reports whether the name still waits for a session id.
func (n *recordName) wantsSession() bool {
	return n.session == "" && strings.Contains(n.pattern, phSession)
}

// observe notes the first session id in a frame (a session/new result, or
// the params of session/load or session/prompt). Called only while
// wantsSession, and decodes only frames that mention a session id.
func (n *recordName) observe(line []byte) {
	if !bytes.Contains(line, []byte(`"sessionId"`)) {
		return
	}
	var m struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
		Params struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil {
		return
	}
	n.session = m.Result.SessionID
	if n.session == "" {
		n.session = m.Params.SessionID
	}
}

// finish gives the recording its final name once the session is known:
// linked under the new name (never replacing a file), then unlinked.
func (n *recordName) finish(log *slog.Logger) {
	if !strings.Contains(n.pattern, phSession) {
		return
	}
	if n.session == "" {
		log.Warn("recording kept under its pending name: no session was opened", "path", n.opened)
		return
	}
	final := strings.ReplaceAll(n.pattern, phSession, fileSafe(n.session))
	err := os.Link(n.opened, final)
	for seq := 2; errors.Is(err, fs.ErrExist) && seq <= maxRecordSeq; seq++ {
		err = os.Link(n.opened, withSeq(final, seq)) // never over another run's file
	}
	if err != nil {
		log.Warn("recording kept under its pending name", "path", n.opened, "err", err)
		return
	}
	_ = os.Remove(n.opened)
}

// fileSafe keeps [A-Za-z0-9._-] of s (others become '_'), at most 80 bytes.
func fileSafe(s string) string {
	b := []byte(s)
	if len(b) > 80 {
		b = b[:80]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if s := string(b); s != "." && s != ".." {
		return s
	}
	return "_"
}
