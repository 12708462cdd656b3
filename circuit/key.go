package circuit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// DefaultNamespace is the namespace of a key whose Namespace is empty.
const DefaultNamespace = "default"

// Bounds of the key fields, so that a key (and the record that carries it)
// stays small whatever an agent reports as its model.
const (
	maxNamespace = 64
	maxProvider  = 128
	maxModel     = 256
	maxScope     = 32
)

// Key names one circuit. Two sessions share a circuit exactly when their
// keys are equal after [Key.Normalize].
type Key struct {
	// Namespace separates tenants or accounts that share one store
	// (--circuit-namespace). ASCII letters, digits, '-' and '_' only, so
	// that it can appear literally in a NATS subject and be the unit of a
	// NATS permission. Empty means DefaultNamespace.
	Namespace string `json:"namespace"`
	// Provider is the adapter or provider id (the resolved adapter
	// identity, e.g. "cursor-acp", "codex-acp").
	Provider string `json:"provider"`
	// Model is the model the failing turn ran on, "" when unknown.
	Model string `json:"model,omitempty"`
	// Scope is the verdict's scope: provider, account, model, agent,
	// network, unknown.
	Scope string `json:"scope"`
}

// ErrInvalidKey is wrapped by every key validation error.
var ErrInvalidKey = errors.New("circuit: invalid key")

// Normalize returns k with an empty Namespace replaced by DefaultNamespace,
// or an error wrapping ErrInvalidKey naming the bad field.
func (k Key) Normalize() (Key, error) {
	if k.Namespace == "" {
		k.Namespace = DefaultNamespace
	}
	switch {
	case len(k.Namespace) > maxNamespace || !nsChars(k.Namespace):
		return k, fmt.Errorf("%w: namespace %q: want 1-%d of A-Z a-z 0-9 - _", ErrInvalidKey, k.Namespace, maxNamespace)
	case k.Provider == "" || len(k.Provider) > maxProvider || !printable(k.Provider):
		return k, fmt.Errorf("%w: provider: want 1-%d printable bytes", ErrInvalidKey, maxProvider)
	case len(k.Model) > maxModel || !printable(k.Model):
		return k, fmt.Errorf("%w: model: want at most %d printable bytes", ErrInvalidKey, maxModel)
	case k.Scope == "" || len(k.Scope) > maxScope || !printable(k.Scope):
		return k, fmt.Errorf("%w: scope: want 1-%d printable bytes", ErrInvalidKey, maxScope)
	}
	return k, nil
}

// String is the key as people read it: namespace/provider/model/scope,
// with "-" for an unknown model. It is what a ProviderError's
// circuit.key carries.
func (k Key) String() string {
	m := k.Model
	if m == "" {
		m = "-"
	}
	return k.Namespace + "/" + k.Provider + "/" + m + "/" + k.Scope
}

// ID is the key's storage id: "ns.<namespace>.<hash>", where hash is the
// first 128 bits of SHA-256 over the four fields (NUL-separated), in hex.
// The id is a valid NATS key-value key and file-name-safe; the readable
// key travels inside the record. k must be normalized.
func (k Key) ID() string {
	h := sha256.New()
	for _, f := range []string{k.Namespace, k.Provider, k.Model, k.Scope} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return "ns." + k.Namespace + "." + hex.EncodeToString(h.Sum(nil)[:16])
}

func nsChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// printable reports whether s has no control characters (C0, DEL).
func printable(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
