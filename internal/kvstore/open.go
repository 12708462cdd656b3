package kvstore

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Backend is one kind of store a spec can name. Each backend is one file
// of this package (file.go, memory.go, nats.go) and one row of registry
// below; a test may add one with Register.
type Backend struct {
	Kind Kind
	// Want names the backend in the refusal of a spec no backend takes
	// ("file", "a nats:// URL").
	Want string
	// Match reports whether a spec (spaces trimmed) names this backend.
	Match func(spec string) bool
	// Local: the values stay in this process. A Schema that is Shared
	// opens nothing on it.
	Local bool
	// Open opens the store of one schema at spec.
	Open func(spec string, s Schema, o Options) (Store, error)
	// Share, when set, makes the connection the stores of one process
	// share: o carrying it, and what closes it (see Share).
	Share func(spec string, o Options) (Options, func() error, error)
}

// Schema is what one typed view (circuits, held prompts, presence, the
// catalogue overlay) keeps in any backend: its document in the state
// directory and its bucket.
type Schema struct {
	What string // the view in errors: "circuit store" ("": its caller says it)
	// Shared: the values mean something only to other processes, so a
	// Local backend (memory) opens nothing.
	Shared bool
	File   FileOptions // the file backend's document
	// NATS is the bucket: Bucket, Description, TTL (its default) and
	// MaxValue; the connection comes from Options.
	NATS NATSOptions
}

// Options is how a process opens a store: where and how it connects.
// Zero fields take the schema's values.
type Options struct {
	Dir string // the state directory of the file backend's documents
	// DefaultDir, when Dir is "", says the state directory (called only
	// by a backend that keeps files).
	DefaultDir func() (string, error)
	// Conn is a NATS connection to share (Share's, DialNATS's); the store
	// does not close it. nil: the store dials its own with Name and Extra
	// and closes it.
	Conn   *nats.Conn
	Name   string        // the connection name the server shows
	Extra  []nats.Option // more NATS client options (credentials, TLS)
	Bucket string        // instead of the schema's bucket name
	TTL    time.Duration // instead of the schema's bucket max age
}

// registry is the kinds of store, in the order the refusal of an unknown
// spec lists them.
var (
	registryMu sync.RWMutex
	registry   = []Backend{fileBackend, memoryBackend, natsBackend}
)

// Register adds a backend (tests: a fault-injecting store) and returns
// what removes it again.
func Register(b Backend) (unregister func()) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry = append(registry, b)
	return func() {
		registryMu.Lock()
		defer registryMu.Unlock()
		registry = slices.DeleteFunc(registry, func(r Backend) bool { return r.Kind == b.Kind })
	}
}

// backend returns the backend that takes spec (trimmed), or nil.
func backend(spec string) *Backend {
	registryMu.RLock()
	defer registryMu.RUnlock()
	if i := slices.IndexFunc(registry, func(b Backend) bool { return b.Match(spec) }); i >= 0 {
		b := registry[i]
		return &b
	}
	return nil
}

// ParseSpec says which store spec names (a --circuits value,
// ACP_GUARD_CIRCUITS, the config file's "circuits"; a session's circuits,
// held prompts, presence and overlay use the same one), ignoring
// surrounding spaces, and returns the trimmed value (for NATS, the server
// URLs). Anything else is an error naming the value with any password
// hidden.
func ParseSpec(spec string) (Kind, string, error) {
	spec = strings.TrimSpace(spec)
	if spec == string(KindOff) {
		return KindOff, spec, nil
	}
	if b := backend(spec); b != nil {
		return b.Kind, spec, nil
	}
	registryMu.RLock()
	want := []string{string(KindOff)}
	for _, b := range registry {
		want = append(want, b.Want)
	}
	registryMu.RUnlock()
	last := len(want) - 1
	return "", "", fmt.Errorf("circuits %q: want %s or %s", redactURL(spec), strings.Join(want[:last], ", "), want[last])
}

// Open opens the store of schema s that spec names, with o: nil, nil for
// off, and for a Local backend (memory) when s is Shared. A spec no
// backend takes is ParseSpec's error; a store that cannot be opened is an
// error prefixed with s.What (when set).
func Open(spec string, s Schema, o Options) (Store, error) {
	kind, spec, err := ParseSpec(spec)
	if err != nil || kind == KindOff {
		return nil, err
	}
	b := backend(spec)
	if b.Local && s.Shared {
		return nil, nil
	}
	st, err := b.Open(spec, s, o)
	switch {
	case err != nil && s.What != "":
		return nil, fmt.Errorf("%s: %w", s.What, err)
	case err != nil:
		return nil, err // not st: a backend's typed nil
	}
	return st, nil
}

// Shared reports whether spec names a backend whose values other
// processes see (not off, not memory).
func Shared(spec string) bool {
	b := backend(strings.TrimSpace(spec))
	return b != nil && !b.Local
}

// dir is the state directory o names.
func (o Options) dir() (string, error) {
	if o.Dir == "" && o.DefaultDir != nil {
		return o.DefaultDir()
	}
	return o.Dir, nil
}

// Share returns o carrying the connection that the stores spec names
// share within a process (one NATS connection for every bucket), and
// what closes it after them; a backend without one returns o unchanged.
func Share(spec string, o Options) (Options, func() error, error) {
	_, spec, err := ParseSpec(spec)
	if b := backend(spec); err == nil && b != nil && b.Share != nil {
		return b.Share(spec, o)
	}
	return o, func() error { return nil }, err
}

// bucket is the NATS options of schema s's bucket opened with o.
func (s Schema) bucket(o Options) NATSOptions {
	n := s.NATS
	n.Conn, n.Name, n.Extra = o.Conn, o.Name, o.Extra
	n.Bucket = cmp.Or(o.Bucket, n.Bucket)
	n.TTL = cmp.Or(max(o.TTL, 0), n.TTL)
	return n
}
