package acpguard

import (
	"errors"
	"log/slog"

	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/policy"
)

// The attempt logs a pipeline can keep (guard.AttemptLog). Only the
// guard's one attempt-log writer calls them, one record at a time, in
// order: the live proxy's on its journal goroutine, a replay's in line.

// dirLog is the attempt log in a state directory, opened on first use, so
// a session without failures creates no files. A log that cannot be
// opened stays failed: every later Append reports the same error, so no
// recovery is scheduled without its record (the guard fails closed).
type dirLog struct {
	dir string // "" : the default state directory
	l   *policy.Log
	err error // the error that opening the log failed with
}

func (z *dirLog) Append(r policy.Record) error {
	if z.err != nil {
		return z.err
	}
	if z.l == nil {
		dir := z.dir
		if dir == "" {
			d, err := policy.DefaultStateDir()
			if err != nil {
				z.err = err
				return err
			}
			dir = d
		}
		l, err := policy.OpenLog(dir)
		if err != nil {
			z.err = err
			return err
		}
		z.l = l
	}
	return z.l.Append(r)
}

func (z *dirLog) close() error {
	if z.l != nil {
		return z.l.Close()
	}
	return nil
}

// memoryLog is a replayed or served session's attempt log: records are
// kept nowhere, and the writes the recording saw fail (its attempt_log
// events, by record number) fail again, so a replay decides as the live
// proxy did when its state directory was unwritable.
type memoryLog struct {
	fail map[int]string
	n    int
}

func (m *memoryLog) Append(policy.Record) error {
	m.n++
	if msg, ok := m.fail[m.n]; ok {
		return errors.New(msg)
	}
	return nil
}

// failureTap is told about every attempt-log write that failed.
type failureTap interface {
	attemptLogFailed(seq int, err error)
}

// tappedLog numbers the records of inner and reports each failed write to
// the transcript, so that a replay fails the same writes.
type tappedLog struct {
	inner guard.AttemptLog
	tap   failureTap
	log   *slog.Logger
	n     int
}

func (t *tappedLog) Append(r policy.Record) error {
	t.n++
	err := t.inner.Append(r)
	if err != nil {
		t.tap.attemptLogFailed(t.n, err)
	}
	return err
}
