package pipeline

import (
	"fmt"
	"os"

	"github.com/acp-guard/acp-guard/internal/safefile"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/replay"
)

// The attempt logs a pipeline can keep (guard.AttemptLog). Only the
// guard's one attempt-log writer calls them, one record at a time, in
// order: the live proxy's on its journal goroutine, a replay's in line.

// dirLog is the attempt log in a state directory, opened on first use, so
// a session without failures creates no files. A log that cannot be
// opened stays failed: every later Append reports the same error, so no
// recovery is scheduled without its record (the guard fails closed).
// stateDirUsable checks that the state directory (dir, else the default)
// can be created and written: it makes it (0700, not through a symbolic
// link) and creates and removes a file in it. The error names the field (ConfigError.Field).
func stateDirUsable(dir string) error {
	if dir == "" {
		d, err := policy.DefaultStateDir()
		if err != nil {
			return fieldErr("StateDir", "", err)
		}
		dir = d
	}
	if err := safefile.MkdirPrivate(dir); err != nil {
		return fieldErr("StateDir", dir, err)
	}
	f, err := os.CreateTemp(dir, ".acp-guard-probe-*")
	if err != nil {
		return fieldErr("StateDir", dir, fmt.Errorf("not writable: %w", err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

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
// kept nowhere, and a write fails when the recording says the live write
// failed. Deferred (a replay deciding as the recording did, from a
// transcript that notes where the live proxy learned each write's result:
// its attempt_log events), a write completes only when its event is played
// (AppendThen), so what the live proxy saw between a decision and its
// record — a late frame before the retry's notice — comes in the same
// order, and a write whose result the live proxy never learned never
// completes. Otherwise a write completes at once.
type memoryLog struct {
	results  map[int]error       // by record number: the recorded outcome
	deferred bool                // complete writes at their events only
	pending  map[int]func(error) // writes waiting for their event
	n        int                 // records appended (Append)
}

func newMemoryLog(events []replay.Event, deferred bool) *memoryLog {
	return &memoryLog{results: replay.AttemptLogResults(events), deferred: deferred, pending: map[int]func(error){}}
}

func (m *memoryLog) Append(policy.Record) error {
	m.n++
	return m.results[m.n]
}

func (m *memoryLog) AppendThen(seq int, _ policy.Record, done func(error)) {
	m.n = seq
	if !m.deferred {
		done(m.results[seq])
		return
	}
	m.pending[seq] = done
}

// complete delivers record seq's recorded result to the write waiting for
// it (the replay reached its attempt_log event).
func (m *memoryLog) complete(seq int) {
	if done, ok := m.pending[seq]; ok {
		delete(m.pending, seq)
		done(m.results[seq])
	}
}
