package acpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
)

// Placeholders of a --record path, for one file per run:
//
//	{pid}      acp-guard's process id
//	{time}     the start time, UTC, as 20260915T120000Z
//	{session}  the first ACP session id of the run (characters other than
//	           [A-Za-z0-9._-] become '_'); until it is known the file is
//	           named with "pending-<pid>" in its place, and it is renamed
//	           when the recording ends (without replacing an existing file)
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

// recordName tracks a --record path holding {session}.
type recordName struct {
	pattern string // {pid} and {time} expanded
	opened  string // the path the recorder writes
	session string // the first session id seen, "" until then
}

func newRecordName(p string, start time.Time, pid int) *recordName {
	pattern := expandRecordPath(p, start, pid)
	return &recordName{pattern: pattern, opened: strings.ReplaceAll(pattern, phSession, "pending-"+strconv.Itoa(pid))}
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
	if err := os.Link(n.opened, final); err != nil {
		if errors.Is(err, fs.ErrExist) {
			err = fmt.Errorf("%s already exists", final)
		}
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
