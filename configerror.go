package acpguard

import (
	"errors"

	"github.com/acp-guard/acp-guard/internal/pipeline"
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
func (e *ConfigError) Error() string {
	return (&pipeline.FieldError{Field: e.Field, Value: e.Value, Err: e.Err}).Error()
}

func (e *ConfigError) Unwrap() error { return e.Err }

// configError turns err into the *ConfigError a caller gets, with the
// field it is about.
func configError(err error) *ConfigError {
	var fe *pipeline.FieldError
	if errors.As(err, &fe) && error(fe) == err {
		return &ConfigError{Field: fe.Field, Value: fe.Value, Err: fe.Err}
	}
	return &ConfigError{Err: err}
}
