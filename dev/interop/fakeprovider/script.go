package fakeprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Then values: what a cut stream does after its last event.
const (
	ThenDrop  = "drop"
	ThenEnd   = "end"
	ThenError = "error"
	ThenStall = "stall"
)

// Cut values: symbolic event counts for a cut stream.
const (
	CutBeforeText = "before_text"
	CutAfterText  = "after_text"
)

// DefaultText is the assistant text of a success step without text.
const DefaultText = "Hello from the fake provider."

// Step is one scripted answer. The zero Step is a success.
type Step struct {
	Times    int               `json:"times,omitempty"`
	Delay    Duration          `json:"delay,omitempty"`
	Status   int               `json:"status,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	Body     json.RawMessage   `json:"body,omitempty"`
	Text     string            `json:"text,omitempty"`
	Events   *int              `json:"events,omitempty"`
	Cut      string            `json:"cut,omitempty"`
	Then     string            `json:"then,omitempty"`
	Error    json.RawMessage   `json:"error,omitempty"`
	StallFor Duration          `json:"stall_for,omitempty"`
	// Empty streams a complete, well-formed answer with no text at all.
	Empty bool `json:"empty,omitempty"`
}

// Fail returns a step answering times requests with status and a JSON body.
func Fail(times, status int, body string) Step {
	return Step{Times: times, Status: status, Body: json.RawMessage(body)}
}

// plain reports whether the step answers with a plain (non-stream) response.
func (s Step) plain() bool {
	return len(s.Body) > 0 || (s.Status != 0 && s.Status != 200)
}

// bodyBytes returns the body to send: a JSON string body is sent as its text.
func (s Step) bodyBytes() []byte {
	b := bytes.TrimSpace(s.Body)
	if len(b) > 0 && b[0] == '"' {
		var str string
		if json.Unmarshal(b, &str) == nil {
			return []byte(str)
		}
	}
	return b
}

func (s Step) validate() error {
	switch s.Then {
	case "", ThenDrop, ThenEnd, ThenError, ThenStall:
	default:
		return fmt.Errorf("then: unknown value %q", s.Then)
	}
	switch s.Cut {
	case "", CutBeforeText, CutAfterText:
	default:
		return fmt.Errorf("cut: unknown value %q", s.Cut)
	}
	if s.Cut != "" && s.Events != nil {
		return fmt.Errorf("cut and events are exclusive")
	}
	if s.Then == ThenError && len(s.Error) == 0 {
		return fmt.Errorf("then=error needs error")
	}
	if s.Times < -1 {
		return fmt.Errorf("times: %d is below -1", s.Times)
	}
	if s.Status != 0 && (s.Status < 100 || s.Status > 599) {
		return fmt.Errorf("status: %d is not an HTTP status", s.Status)
	}
	if s.Events != nil && *s.Events < 0 {
		return fmt.Errorf("events: %d is negative", *s.Events)
	}
	return nil
}

// Script maps "route@model", "route" or "*" to a queue of steps.
type Script map[string][]Step

// ParseScript decodes and validates a JSON script.
func ParseScript(data []byte) (Script, error) {
	var s Script
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("fakeprovider: parse script: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Validate checks every step and names the first bad one.
func (s Script) Validate() error {
	for key, steps := range s {
		for i, st := range steps {
			if err := st.validate(); err != nil {
				return fmt.Errorf("fakeprovider: script %s[%d]: %w", key, i, err)
			}
		}
	}
	return nil
}

func (s Script) clone() Script {
	c := make(Script, len(s))
	for k, v := range s {
		c[k] = append([]Step(nil), v...)
	}
	return c
}

// Duration is a time.Duration that reads "1.5s" strings or millisecond numbers.
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	ms, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("duration %s: want a string like \"2s\" or milliseconds", b)
	}
	*d = Duration(time.Duration(ms) * time.Millisecond)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}
