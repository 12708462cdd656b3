package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Directions of transcript events.
const (
	DirMeta   = "meta"   // the first event: who was recorded
	DirC2A    = "c2a"    // a frame from the client side to the agent
	DirA2C    = "a2c"    // a frame from the agent side to the client
	DirStderr = "stderr" // one line of the agent's stderr
	DirExit   = "exit"   // the agent's exit
	// DirStop: acp-guard was told to stop (a signal, or its context
	// ended): no attempt of its own starts after it.
	DirStop = "stop"
	// DirAttemptLog: the proxy learned the result of writing a record to
	// its attempt log.
	DirAttemptLog = "attempt_log"
	// DirCatalogue: the proxy classifies with another catalogue from the
	// Turn-th session/prompt on (0: from the start): Catalogue is its
	// version, Overlay the overlay document it merged over the base
	// catalogue (absent: the base alone, an overlay cleared).
	DirCatalogue = "catalogue"
)

// ViaGuard marks a frame that acp-guard emitted itself or rewrote.
const ViaGuard = "guard"

// Event is one transcript line. See the package documentation for the format.
type Event struct {
	TMs int64  // milliseconds since the recording started
	Dir string // one of the Dir constants

	// Msg is the frame's exact bytes for c2a/a2c (valid JSON, embedded
	// verbatim), or a JSON string holding the text for stderr.
	Msg json.RawMessage
	// Raw is the frame's text when it is not valid JSON, or the exact line
	// when it is valid JSON surrounded by white space (Msg then holds the
	// JSON without it).
	Raw *string

	Code   *int   // exit code, exit events only
	Signal string // signal name, exit events only
	// ClientClosed marks an exit that came after the client had closed
	// its input (exit events only).
	ClientClosed bool
	// StartError is why the agent could not be started (exit events
	// only; redacted like stderr).
	StartError string

	Via        string // "guard" when the proxy emitted or rewrote the frame
	Suppressed bool   // an original frame the proxy did not forward
	CRLF       bool   // the line ended in "\r\n"

	Argv                        []string // meta only
	Adapter, Version, Catalogue string   // meta only
	// Policy is the effective policy document the proxy ran under
	// (compact JSON object), and Fallback its --fallback-models; meta
	// only, optional.
	Policy   json.RawMessage
	Fallback []string
	// The rest of the configuration that shaped what the client saw (meta
	// only, optional): when the recording started (t_ms counts from
	// there), the notice channel, the stall timeout in effect, where the
	// circuits were kept ("off" when there were none) and their namespace.
	Start            time.Time
	Notices          string
	StallTimeoutMs   int64
	Circuits         string
	CircuitNamespace string
	// CircuitHolder is the name the proxy's sessions had for the circuits
	// (their probe leases and wake offsets hash it): a replay takes it to
	// decide as the live proxy did.
	CircuitHolder string
	// AttemptLog says where the proxy kept its attempt log ("dir" or
	// "memory"; "" : none, or not said): when set, the transcript holds an
	// attempt_log event wherever the proxy learned a write's result.
	AttemptLog string

	// JitterSeed seeds the full jitter of the proxy's retry delays (meta
	// only, optional): a replay draws the same delays with it.
	JitterSeed uint64

	// Seq and Err describe an attempt_log event: the proxy learned here
	// that the Seq-th attempt record of the session (from 1) was written,
	// or, with Err (redacted), that it could not be.
	Seq int
	Err string

	// Turn and Overlay describe a catalogue event (Catalogue is its
	// version): from the Turn-th session/prompt the guard saw (from 1; 0:
	// before the first), it classified with the base catalogue merged
	// with Overlay (a JSON object on one line; nil: the base alone).
	Turn    int
	Overlay json.RawMessage

	// Line is the 1-based line number the Reader read the event from; 0 for
	// events that were not read. It is not part of the format.
	Line int
}

// Bytes returns the frame's exact line bytes, without the line ending, for a
// c2a or a2c event. The result must not be modified.
func (e Event) Bytes() []byte {
	if e.Raw != nil {
		return []byte(*e.Raw)
	}
	return e.Msg
}

// IsJSON reports whether a c2a or a2c event's frame is valid JSON.
func (e Event) IsJSON() bool { return e.Msg != nil }

// Original reports whether the peer itself sent the frame (it carries no via).
func (e Event) Original() bool { return e.Via == "" }

// Text returns a stderr event's line, or "" for other events.
func (e Event) Text() string {
	if e.Dir != DirStderr {
		return ""
	}
	var s string
	if json.Unmarshal(e.Msg, &s) != nil {
		return ""
	}
	return s
}

// StderrEvent returns the event for one line of stderr text.
func StderrEvent(tMs int64, text string) Event {
	return Event{TMs: tMs, Dir: DirStderr, Msg: appendString(nil, text)}
}

// MarshalJSON encodes e as one compact transcript line (without "\n"), with
// the fields in a fixed order. Msg is embedded as is.
func (e Event) MarshalJSON() ([]byte, error) {
	if e.Msg != nil && !json.Valid(e.Msg) {
		return nil, errors.New(`replay: event "msg" is not valid JSON`)
	}
	if err := e.validate(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return e.appendJSON(nil), nil
}

// appendJSON appends e's encoding to dst. The caller guarantees that Msg is
// valid JSON without surrounding white space. Members follow in wire
// order: t_ms and dir, an exit's, a meta line's (with via among its
// strings), an attempt_log or catalogue event's, and a frame's.
func (e Event) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"t_ms":`...)
	dst = strconv.AppendInt(dst, e.TMs, 10)
	dst = append(dst, `,"dir":`...)
	dst = appendString(dst, e.Dir)
	dst = e.appendExit(dst)
	dst = e.appendMeta(dst)
	dst = e.appendLogs(dst)
	dst = e.appendFrame(dst)
	return append(dst, '}')
}

// appendExit appends an exit event's members.
func (e *Event) appendExit(dst []byte) []byte {
	if e.Code != nil {
		dst = append(dst, `,"code":`...)
		dst = strconv.AppendInt(dst, int64(*e.Code), 10)
	}
	dst = appendStringMember(dst, `,"signal":`, e.Signal)
	if e.ClientClosed {
		dst = append(dst, `,"client_closed":true`...)
	}
	return appendStringMember(dst, `,"start_error":`, e.StartError)
}

// appendMeta appends a meta event's members, and via, which the wire
// keeps among its strings.
func (e *Event) appendMeta(dst []byte) []byte {
	dst = appendStringList(dst, `,"argv":`, e.Argv)
	var start string
	if !e.Start.IsZero() {
		start = e.Start.UTC().Format(time.RFC3339Nano)
	}
	for _, f := range [...]struct{ key, val string }{
		{`,"adapter":`, e.Adapter}, {`,"version":`, e.Version},
		{`,"catalogue":`, e.Catalogue}, {`,"start":`, start}, {`,"notices":`, e.Notices},
		{`,"circuits":`, e.Circuits}, {`,"circuit_namespace":`, e.CircuitNamespace}, {`,"circuit_holder":`, e.CircuitHolder}, {`,"attempt_log":`, e.AttemptLog},
		{`,"via":`, e.Via},
	} {
		dst = appendStringMember(dst, f.key, f.val)
	}
	if e.Policy != nil {
		dst = append(dst, `,"policy":`...)
		dst = append(dst, e.Policy...)
	}
	dst = appendStringList(dst, `,"fallback":`, e.Fallback)
	if e.JitterSeed != 0 {
		dst = append(dst, `,"jitter_seed":`...)
		dst = strconv.AppendUint(dst, e.JitterSeed, 10)
	}
	if e.StallTimeoutMs > 0 {
		dst = append(dst, `,"stall_timeout_ms":`...)
		dst = strconv.AppendInt(dst, e.StallTimeoutMs, 10)
	}
	return dst
}

// appendLogs appends an attempt_log event's members, then a catalogue
// event's (its version is the meta line's "catalogue").
func (e *Event) appendLogs(dst []byte) []byte {
	if e.Seq > 0 {
		dst = append(dst, `,"seq":`...)
		dst = strconv.AppendInt(dst, int64(e.Seq), 10)
	}
	dst = appendStringMember(dst, `,"err":`, e.Err)
	if e.Dir == DirCatalogue {
		dst = append(dst, `,"turn":`...)
		dst = strconv.AppendInt(dst, int64(e.Turn), 10)
	}
	if e.Overlay != nil {
		dst = append(dst, `,"overlay":`...)
		dst = append(dst, e.Overlay...)
	}
	return dst
}

// appendFrame appends a frame's members, the frame itself last.
func (e *Event) appendFrame(dst []byte) []byte {
	if e.Suppressed {
		dst = append(dst, `,"suppressed":true`...)
	}
	if e.CRLF {
		dst = append(dst, `,"crlf":true`...)
	}
	if e.Raw != nil {
		dst = append(dst, `,"raw":`...)
		dst = appendString(dst, *e.Raw)
	}
	if e.Msg != nil {
		dst = append(dst, `,"msg":`...)
		dst = append(dst, e.Msg...)
	}
	return dst
}

// appendStringMember appends key (`,"name":`) and val as a JSON string,
// unless val is empty.
func appendStringMember(dst []byte, key, val string) []byte {
	if val == "" {
		return dst
	}
	dst = append(dst, key...)
	return appendString(dst, val)
}

// appendStringList appends key (`,"name":`) and list as an array of
// JSON strings, unless list is nil.
func appendStringList(dst []byte, key string, list []string) []byte {
	if list == nil {
		return dst
	}
	dst = append(dst, key...)
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// wireEvent is the decoding shape of an event; pointers tell absent fields
// from zero values.
type wireEvent struct {
	TMs          *int64          `json:"t_ms"`
	Dir          *string         `json:"dir"`
	Msg          json.RawMessage `json:"msg"`
	Raw          *string         `json:"raw"`
	Code         *int            `json:"code"`
	Signal       string          `json:"signal"`
	ClientClosed bool            `json:"client_closed"`
	StartError   string          `json:"start_error"`
	Via          string          `json:"via"`
	Suppressed   bool            `json:"suppressed"`
	CRLF         bool            `json:"crlf"`
	Argv         []string        `json:"argv"`
	Adapter      string          `json:"adapter"`
	Version      string          `json:"version"`
	Catalogue    string          `json:"catalogue"`
	Policy       json.RawMessage `json:"policy"`
	Fallback     []string        `json:"fallback"`
	Start        string          `json:"start"`
	Notices      string          `json:"notices"`
	StallMs      int64           `json:"stall_timeout_ms"`
	Circuits     string          `json:"circuits"`
	Namespace    string          `json:"circuit_namespace"`
	Holder       string          `json:"circuit_holder"`
	AttemptLog   string          `json:"attempt_log"`
	JitterSeed   uint64          `json:"jitter_seed"`
	Seq          int             `json:"seq"`
	Err          string          `json:"err"`
	Turn         int             `json:"turn"`
	Overlay      json.RawMessage `json:"overlay"`
}

// UnmarshalJSON decodes and validates one transcript line. Msg keeps the
// line's bytes for the frame exactly.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Dir == nil {
		return errors.New(`missing "dir"`)
	}
	ev := Event{
		Dir: *w.Dir, Msg: w.Msg, Raw: w.Raw, Code: w.Code, Signal: w.Signal, ClientClosed: w.ClientClosed, StartError: w.StartError,
		Via: w.Via, Suppressed: w.Suppressed, CRLF: w.CRLF,
		Argv: w.Argv, Adapter: w.Adapter, Version: w.Version, Catalogue: w.Catalogue,
		Policy: w.Policy, Fallback: w.Fallback,
		Notices: w.Notices, StallTimeoutMs: w.StallMs, Circuits: w.Circuits, CircuitNamespace: w.Namespace, CircuitHolder: w.Holder, AttemptLog: w.AttemptLog,
		JitterSeed: w.JitterSeed,
		Seq:        w.Seq, Err: w.Err,
		Turn: w.Turn, Overlay: w.Overlay,
	}
	if w.Start != "" {
		t, err := time.Parse(time.RFC3339Nano, w.Start)
		if err != nil {
			return fmt.Errorf(`meta event: "start" %q is not an RFC 3339 time`, w.Start)
		}
		ev.Start = t
	}
	if w.TMs != nil {
		ev.TMs = *w.TMs
	} else if ev.Dir != DirMeta {
		return errors.New(`missing "t_ms"`)
	}
	if err := ev.validate(); err != nil {
		return err
	}
	*e = ev
	return nil
}

// validate checks the fields each direction requires. Msg is known to be
// valid JSON.
func (e Event) validate() error {
	if e.TMs < 0 {
		return fmt.Errorf(`negative "t_ms" %d`, e.TMs)
	}
	if e.StallTimeoutMs < 0 {
		return fmt.Errorf(`negative "stall_timeout_ms" %d`, e.StallTimeoutMs)
	}
	switch e.Dir {
	case DirMeta:
		if e.Policy != nil && (len(e.Policy) == 0 || e.Policy[0] != '{' || bytes.IndexByte(e.Policy, '\n') >= 0) {
			return errors.New(`meta event: "policy" must be a JSON object on one line`)
		}
	case DirC2A, DirA2C:
		if e.Msg == nil && e.Raw == nil {
			return fmt.Errorf(`%s event: missing "msg" or "raw"`, e.Dir)
		}
		if e.Msg != nil && (len(bytes.TrimSpace(e.Msg)) != len(e.Msg) || bytes.IndexByte(e.Msg, '\n') >= 0) {
			return fmt.Errorf(`%s event: "msg" has white space outside the frame`, e.Dir)
		}
	case DirStderr:
		if len(e.Msg) == 0 || e.Msg[0] != '"' {
			return errors.New(`stderr event: "msg" must be a string`)
		}
	case DirExit:
		if e.Code == nil {
			return errors.New(`exit event: missing "code"`)
		}
	case DirStop:
	case DirAttemptLog:
		if e.Seq < 1 {
			return errors.New(`attempt_log event: "seq" must be a record number from 1`)
		}
	case DirCatalogue:
		if e.Catalogue == "" || e.Turn < 0 {
			return errors.New(`catalogue event: want "catalogue" (a version) and "turn" ≥ 0`)
		}
		if e.Overlay != nil && (len(e.Overlay) == 0 || e.Overlay[0] != '{' || bytes.IndexByte(e.Overlay, '\n') >= 0) {
			return errors.New(`catalogue event: "overlay" must be a JSON object on one line`)
		}
	default:
		return fmt.Errorf(`unknown "dir" %q`, e.Dir)
	}
	return nil
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// control characters, U+2028 and U+2029 are escaped; HTML is left alone.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
