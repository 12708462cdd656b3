package held

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

// EntryVersion is the version of the stored entry format. An entry with
// another version is neither read nor overwritten (ErrFormat).
const EntryVersion = 1

// Actions an operator or the client may take on a held prompt.
const (
	ActionRetryNow = "retry_now" // send the retry now: the wait (or the park) ends
	ActionSkip     = "skip"      // switch to the next fallback model now
	ActionStop     = "stop"      // stop recovery: the client gets the ProviderError now
)

// Actions lists every action, in the order they are offered.
var Actions = []string{ActionRetryNow, ActionSkip, ActionStop}

// States in which a prompt is held and takes actions (the guard's state
// names, guard/doc.go).
var heldStates = []string{"waiting_for_reset", "retry_wait", "parked"}

// Actionable reports whether a prompt in state takes actions.
func Actionable(state string) bool { return slices.Contains(heldStates, state) }

// Bounds of the entry's strings, so that an entry stays small whatever an
// agent reports (session ids and models are the agent's).
const (
	maxField = 256
	maxID    = 128
)

// Entry is one held prompt as a store keeps it (format version 1; see
// doc.go). The holding process writes it; an operator writes only
// Request, by compare-and-swap at the revision it read. Times are UTC.
type Entry struct {
	Version   int    `json:"v"`
	Namespace string `json:"namespace"`
	// Holder names the prompt across processes and machines:
	// host/pid/guard/session/request (the circuits' lease holder id).
	Holder    string `json:"holder"`
	Host      string `json:"host"`
	PID       int    `json:"pid"`
	SessionID string `json:"sessionId"`
	RequestID string `json:"requestId"` // the client's JSON-RPC id as raw JSON text
	Agent     string `json:"agent"`
	Model     string `json:"model,omitempty"`
	Code      string `json:"code"`
	Class     string `json:"class"`
	// State is the guard's state of the prompt: a held one
	// (waiting_for_reset, retry_wait, parked), or where the prompt went
	// when the hold ended (retrying, switching, action_required, …).
	State string `json:"state"`
	// Hold numbers the prompt's holds (from 1): a request names the hold
	// it is for, and a request for a hold that is over is refused.
	Hold       uint64     `json:"hold"`
	Since      time.Time  `json:"since"` // when this hold began
	Next       *time.Time `json:"next"`  // the next attempt, when one is scheduled
	Attempt    int        `json:"attempt"`
	MaxRetries int        `json:"maxRetries"`
	// Offered are the actions the holder would take now; it checks again
	// when a request comes.
	Offered []string `json:"actions"`
	// Expires: readers ignore the entry after it (a holder refreshes a
	// held entry well before; one that ended stays readable briefly, for
	// the result).
	Expires   time.Time `json:"expires"`
	UpdatedAt time.Time `json:"updatedAt"`
	Request   *Request  `json:"request,omitempty"`
	Result    *Result   `json:"result,omitempty"`
}

// Request is an action asked of the holder.
type Request struct {
	ID     string    `json:"id"` // chosen by the asker, unique
	Action string    `json:"action"`
	By     string    `json:"by"` // who asks, for the record: "operator" (the CLI)
	Hold   uint64    `json:"hold"`
	At     time.Time `json:"at"`
}

// Result is the holder's answer to the request with the same ID.
type Result struct {
	ID     string    `json:"id"`
	Action string    `json:"action"`
	State  string    `json:"state"`           // the prompt's state after it
	Error  string    `json:"error,omitempty"` // why it was refused
	At     time.Time `json:"at"`
}

// Held reports whether the entry is a held prompt at now: held state,
// not expired.
func (e *Entry) Held(now time.Time) bool {
	return e != nil && Actionable(e.State) && now.Before(e.Expires)
}

// Offers reports whether the holder offered action.
func (e *Entry) Offers(action string) bool { return slices.Contains(e.Offered, action) }

// ErrFormat is wrapped when a stored entry or document is not in a format
// this build understands.
var ErrFormat = errors.New("held: unsupported stored format")

// encodeEntry is the one encoder of stored entries.
func encodeEntry(e Entry) ([]byte, error) {
	e.Version = EntryVersion
	return json.Marshal(e)
}

// decodeEntry parses a stored entry and refuses other format versions.
func decodeEntry(b []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return e, checkVersion(e)
}

func checkVersion(e Entry) error {
	if e.Version != EntryVersion {
		return fmt.Errorf("%w: entry version %d, want %d", ErrFormat, e.Version, EntryVersion)
	}
	return nil
}

// ProcessPrefix is the id prefix of every entry one process (one guard)
// writes: "h.<namespace>.<process hash>." — what its watch covers. process
// is host/pid/guard.
func ProcessPrefix(namespace, process string) (string, error) {
	if err := checkNamespace(namespace); err != nil {
		return "", err
	}
	return "h." + namespace + "." + hash16(process) + ".", nil
}

// NamespacePrefix is the id prefix of every entry of a namespace.
func NamespacePrefix(namespace string) (string, error) {
	if err := checkNamespace(namespace); err != nil {
		return "", err
	}
	return "h." + namespace + ".", nil
}

// ID is the storage id of a prompt's entry: ProcessPrefix + a hash of
// (session, request). It is a valid NATS key and file-name-safe; the
// readable fields travel inside the entry.
func ID(processPrefix, session, request string) string {
	return processPrefix + hash16(session+"\x00"+request)
}

func hash16(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}

// checkNamespace keeps a namespace one NATS token (as circuit keys do).
func checkNamespace(ns string) error {
	if ns == "" || len(ns) > 64 || strings.ContainsFunc(ns, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		return fmt.Errorf("held: namespace %q: want 1-64 of A-Z a-z 0-9 - _", ns)
	}
	return nil
}

// Bound clips the entry's agent-supplied strings to their bounds.
func (e *Entry) Bound() {
	for _, f := range []*string{&e.SessionID, &e.Agent, &e.Model, &e.Code, &e.Class, &e.Holder, &e.Host} {
		*f = clip(*f, maxField)
	}
	e.RequestID = clip(e.RequestID, maxID)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
