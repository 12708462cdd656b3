package circuit

import (
	"github.com/acp-guard/acp-guard/event"

	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// RecordVersion is the version of the stored record format. A record with
// another version is neither read nor overwritten: the operation fails with
// ErrFormat and the caller proceeds as if there were no circuit.
const RecordVersion = 1

// ErrFormat is wrapped when a stored record or file is not in a format this
// build understands.
var ErrFormat = errors.New("circuit: unsupported stored format")

// State names of a circuit, as a ProviderError's circuit.state carries them.
const (
	StateClosed  = "closed"  // no outage known: dispatch
	StateOpen    = "open"    // cooling down, or cooled down with no probe running
	StateProbing = "probing" // cooled down and one session holds the probe lease
)

// Record is the stored state of one circuit (format version 1; see doc.go).
// Times are UTC.
type Record struct {
	Version int `json:"v"`
	Key     Key `json:"key"`
	// OpenUntil is the end of the cooldown; zero when the circuit is closed.
	OpenUntil time.Time `json:"openUntil,omitzero"`
	OpenedAt  time.Time `json:"openedAt,omitzero"`
	ClosedAt  time.Time `json:"closedAt,omitzero"`
	// Code and Class are those of the latest failure that opened or
	// extended the circuit (a later fallback decision asks whether it was
	// rate_limited or another transient code).
	Code  string `json:"code,omitempty"`
	Class string `json:"class,omitempty"`
	// Failures counts the failures that changed the record since the
	// circuit last opened (a failure that changes nothing is not written);
	// Probes the probe leases granted since then.
	Failures int `json:"failures"`
	Probes   int `json:"probes"`
	// CooldownMs is the circuit's own backoff step in milliseconds: the
	// length of the cooldown the opening failure asked for, doubled by
	// every failed probe (capped by MaxCooldown). 0 in records written
	// before it existed (then the step is OpenUntil - OpenedAt).
	CooldownMs int64 `json:"cooldownMs,omitempty"`
	// LastProbe is the holder whose probe failed last: at the end of the
	// next cooldown it lets the others take the lease first, so probing
	// rotates over the sessions that wait.
	LastProbe string `json:"lastProbe,omitempty"`
	// Epoch increases on every open and every close. The release jitter of
	// a session is a function of (seed, holder, epoch).
	Epoch     uint64    `json:"epoch"`
	Lease     *Lease    `json:"lease,omitempty"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Lease is the probe lease: while Until is in the future, Holder alone may
// dispatch on an open circuit. The holder refreshes it while the probe's
// turn runs; an unrefreshed lease (a crashed process) simply expires.
type Lease struct {
	Holder    string    `json:"holder"`
	Until     time.Time `json:"until"`
	GrantedAt time.Time `json:"grantedAt"`
}

// Closed reports whether the stored record is closed. A record that is
// open but stale (see OpenAt) is not Closed, yet lets everyone dispatch.
func (r *Record) Closed() bool { return r == nil || r.OpenUntil.IsZero() }

// staleAfter: an open record whose cooldown ended this long ago (or one
// cooldown step, if longer), with no probe lease running, is stale. The
// sessions that waited on it are gone (their process died, or the store
// was away when its probe succeeded), so it binds nobody: it reads as
// closed, and the next failure opens it afresh.
const staleAfter = 30 * time.Second

// OpenAt reports whether the circuit is open at now: stored open, and not
// stale. An open circuit stays open after its cooldown until a probe's
// outcome closes or re-opens it, but never longer than max(staleAfter,
// one cooldown step) past the cooldown's end (or past a lease's end)
// without any write: stale records expire by their own cooldown.
func (r *Record) OpenAt(now time.Time) bool {
	if r.Closed() {
		return false
	}
	end := r.OpenUntil
	if r.Lease != nil && r.Lease.Until.After(end) && r.Lease.Until.Sub(now) <= 2*staleAfter {
		end = r.Lease.Until // a lease further ahead is a skewed clock's: it keeps nothing open
	}
	return now.Before(end.Add(max(staleAfter, r.Cooldown())))
}

// Cooldown is the circuit's backoff step (see CooldownMs).
func (r *Record) Cooldown() time.Duration {
	switch {
	case r == nil:
		return 0
	case r.CooldownMs > 0:
		return time.Duration(r.CooldownMs) * time.Millisecond
	case !r.OpenedAt.IsZero() && r.OpenUntil.After(r.OpenedAt):
		return r.OpenUntil.Sub(r.OpenedAt)
	}
	return 0
}

// StateAt is the circuit's state name at now.
func (r *Record) StateAt(now time.Time) string {
	switch {
	case !r.OpenAt(now):
		return StateClosed
	case r.leaseValid(now):
		return StateProbing
	default:
		return StateOpen
	}
}

func (r *Record) leaseValid(now time.Time) bool {
	return r.Lease != nil && now.Before(r.Lease.Until)
}

// Snapshot is what a ProviderError's "circuit" member carries when a
// circuit decided: {key, state, cooldownUntil} (package event's).
type Snapshot = event.CircuitSnapshot

// SnapshotAt summarises r at now; a nil r is the closed circuit of key.
func (r *Record) SnapshotAt(key Key, now time.Time) Snapshot {
	s := Snapshot{Key: key.String(), State: r.StateAt(now)}
	if r.OpenAt(now) {
		t := r.OpenUntil.UTC()
		s.CooldownUntil = &t
	}
	return s
}

// encodeRecord is the one encoder of stored records (the NATS value, and
// each entry of the file store).
func encodeRecord(r Record) ([]byte, error) {
	r.Version = RecordVersion
	return json.Marshal(r)
}

// decodeRecord parses a stored record and refuses other format versions.
func decodeRecord(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return r, checkVersion(r)
}

func checkVersion(r Record) error {
	if r.Version != RecordVersion {
		return fmt.Errorf("%w: record version %d, want %d", ErrFormat, r.Version, RecordVersion)
	}
	return nil
}
