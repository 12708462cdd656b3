package acpguard

import (
	"errors"
	"strings"
)

// ConfigError is returned, before anything starts, when the configuration
// cannot be used: a policy or catalogue that does not load, an option out
// of range, a transcript that cannot be created. Field names the Config
// field at fault (or Command, AgentPipes: the argument), Value the value
// the error is about when it is not in the message (a file's name);
// Err is the cause. Field is empty for an error of no one field.
type ConfigError struct {
	Field string
	Value string
	Err   error
}

// Error is "Field[ Value]: cause".
func (e *ConfigError) Error() string { return label(e.Field, e.Value, e.Err) }

func (e *ConfigError) Unwrap() error { return e.Err }

func label(field, value string, err error) string {
	switch {
	case field == "":
		return err.Error()
	case value != "":
		field += " " + value
	}
	msg := err.Error()
	if len(msg) > 0 && msg[0] == '\n' {
		return field + ":" + msg
	}
	return field + ": " + msg
}

// fieldError is an error about one Config field, on its way to the
// ConfigError that carries the field.
type fieldError struct {
	field, value string
	err          error
}

func fieldErr(field, value string, err error) error { return &fieldError{field, value, err} }

func (e *fieldError) Error() string { return label(e.field, e.value, e.err) }
func (e *fieldError) Unwrap() error { return e.err }

// configError turns err into the *ConfigError a caller gets, with the
// field it is about.
func configError(err error) *ConfigError {
	var fe *fieldError
	if errors.As(err, &fe) && error(fe) == err {
		return &ConfigError{Field: fe.field, Value: fe.value, Err: fe.err}
	}
	return &ConfigError{Err: err}
}

// circuitsErr is kvstore.ParseSpec's refusal ("circuits VALUE: cause",
// the value with its password hidden) as an error about Circuits.
func circuitsErr(err error) error {
	msg := strings.TrimPrefix(err.Error(), "circuits ")
	if i := strings.Index(msg, ": "); i > 0 {
		return fieldErr("Circuits", msg[:i], errors.New(msg[i+2:]))
	}
	return fieldErr("Circuits", "", err)
}
