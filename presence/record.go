package presence

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Version is the version of the stored record format.
const Version = 1

// Timing defaults (doc.go, "The model").
const (
	Lease       = 15 * time.Second
	Every       = 5 * time.Second
	Jitter      = 0.2
	MinGap      = time.Second
	CallTimeout = 2 * time.Second
	// SlotWidth and Window: errors are counted per 5 minutes over the
	// last hour.
	SlotWidth = 5 * time.Minute
	Window    = time.Hour
	MaxErrors = 48
)

// States a record says besides a held prompt's (the guard's state names).
const (
	StateStarting    = "starting"     // no prompt yet
	StateIdle        = "idle"         // no prompt in flight
	StatePrompting   = "prompting"    // a prompt is in flight and not held
	StateAgentExited = "agent_exited" // the agent is gone; the client is being answered
)

const maxField = 256

// Record is one process's presence as a store keeps it (format version 1;
// see doc.go). Times are UTC.
type Record struct {
	Version   int          `json:"v"`
	Namespace string       `json:"namespace"`
	Holder    string       `json:"holder"`
	Host      string       `json:"host"`
	PID       int          `json:"pid"`
	Agent     string       `json:"agent"`
	Model     string       `json:"model,omitempty"`
	State     string       `json:"state"`
	Turn      int          `json:"turn"`
	InFlight  int          `json:"inFlight"`
	SessionID string       `json:"sessionId,omitempty"`
	Started   time.Time    `json:"started"`
	Heartbeat time.Time    `json:"heartbeat"`
	Expires   time.Time    `json:"expires"`
	Errors    []ErrorCount `json:"errors,omitempty"`
}

// ErrorCount is how many ProviderErrors of one code and class a session
// classified in one slot of SlotWidth.
type ErrorCount struct {
	Code  string `json:"code"`
	Class string `json:"class"`
	Slot  int64  `json:"slot"`
	N     int    `json:"n"`
}

// SlotOf is the slot t falls in.
func SlotOf(t time.Time) int64 { return t.Unix() / int64(SlotWidth/time.Second) }

// SlotStart is when slot begins.
func SlotStart(slot int64) time.Time {
	return time.Unix(slot*int64(SlotWidth/time.Second), 0).UTC()
}

// Slots is how many slots Window spans.
const Slots = int(Window / SlotWidth)

// LiveAt reports whether the record's lease still runs at now.
func (r Record) LiveAt(now time.Time) bool { return now.Before(r.Expires) }

// Count adds one ProviderError of code and class at t, and drops the
// slots that left the window.
func (r *Record) Count(code, class string, t time.Time) {
	slot := SlotOf(t)
	code, class = clip(code, maxField), clip(class, maxField)
	i := slices.IndexFunc(r.Errors, func(e ErrorCount) bool { return e.Slot == slot && e.Code == code && e.Class == class })
	if i < 0 {
		r.Errors = append(r.Errors, ErrorCount{Code: code, Class: class, Slot: slot})
		i = len(r.Errors) - 1
	}
	r.Errors[i].N++
	r.Prune(t)
}

// Prune drops the error slots older than Window before now, then the
// oldest beyond MaxErrors.
func (r *Record) Prune(now time.Time) {
	first := SlotOf(now) - int64(Slots) + 1
	r.Errors = slices.DeleteFunc(r.Errors, func(e ErrorCount) bool { return e.Slot < first || e.N <= 0 })
	if over := len(r.Errors) - MaxErrors; over > 0 {
		slices.SortStableFunc(r.Errors, func(a, b ErrorCount) int { return int(a.Slot - b.Slot) })
		r.Errors = slices.Delete(r.Errors, 0, over)
	}
}

// Bound clips the record's strings (the agent's names and ids among
// them) and its error rows to their bounds.
func (r *Record) Bound() {
	for _, f := range []*string{&r.Namespace, &r.Holder, &r.Host, &r.Agent, &r.Model, &r.State, &r.SessionID} {
		*f = clip(*f, maxField)
	}
	for i := range r.Errors {
		r.Errors[i].Code, r.Errors[i].Class = clip(r.Errors[i].Code, maxField), clip(r.Errors[i].Class, maxField)
	}
	if over := len(r.Errors) - MaxErrors; over > 0 {
		r.Errors = r.Errors[over:]
	}
}

// clip cuts s to at most n bytes on a rune boundary and replaces control
// characters (a record is shown on a page and in terminals).
func clip(s string, n int) string {
	if len(s) > n {
		for n > 0 && s[n]&0xC0 == 0x80 {
			n--
		}
		s = s[:n]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// Key is the storage key of holder's record in namespace.
func Key(namespace, holder string) (string, error) {
	p, err := Prefix(namespace)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256([]byte(holder))
	return p + hex.EncodeToString(h[:8]), nil
}

// Prefix is the key prefix of every record of namespace.
func Prefix(namespace string) (string, error) {
	if namespace == "" || len(namespace) > 64 || strings.ContainsFunc(namespace, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		return "", fmt.Errorf("presence: namespace %q: want 1-64 of A-Z a-z 0-9 - _", namespace)
	}
	return "p." + namespace + ".", nil
}

// errVersion marks a record of another format version (skipped by
// readers).
var errVersion = errors.New("presence: record of another version")

func encodeRecord(r Record) ([]byte, error) { return json.Marshal(r) }

func decodeRecord(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, err
	}
	if r.Version != Version {
		return Record{}, errVersion
	}
	return r, nil
}

// recordTimes is the file store's pruning rule: a record goes once its
// lease ran out before the newest heartbeat in the document.
func recordTimes(b []byte) (updated, expires time.Time) {
	var r struct {
		Heartbeat time.Time `json:"heartbeat"`
		Expires   time.Time `json:"expires"`
	}
	if json.Unmarshal(b, &r) != nil {
		return time.Time{}, time.Time{}
	}
	return r.Heartbeat, r.Expires
}
