package pipeline

import (
	"errors"
	"strings"
)

// FieldError is an error about one field of the options (the library's
// Config field of the same name), on its way to the library's
// ConfigError, which carries the same three parts. Value is the value the
// error is about when it is not in the message (a file's name).
type FieldError struct {
	Field, Value string
	Err          error
}

func fieldErr(field, value string, err error) error { return &FieldError{field, value, err} }

// Error is "Field[ Value]: cause" (the cause alone without a Field; a
// cause that starts a new line follows the colon directly).
func (e *FieldError) Error() string {
	field, msg := e.Field, e.Err.Error()
	switch {
	case field == "":
		return msg
	case e.Value != "":
		field += " " + e.Value
	}
	if len(msg) > 0 && msg[0] == '\n' {
		return field + ":" + msg
	}
	return field + ": " + msg
}

func (e *FieldError) Unwrap() error { return e.Err }

// circuitsErr is kvstore.ParseSpec's refusal ("circuits VALUE: cause",
// the value with its password hidden) as an error about Circuits.
func circuitsErr(err error) error {
	msg := strings.TrimPrefix(err.Error(), "circuits ")
	if i := strings.Index(msg, ": "); i > 0 {
		return fieldErr("Circuits", msg[:i], errors.New(msg[i+2:]))
	}
	return fieldErr("Circuits", "", err)
}
