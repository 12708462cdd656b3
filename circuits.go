package acpguard

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/policy"
)

// storeMemory keeps circuits in this process only (Config.Circuits).
const storeMemory = "memory"

// openCircuits returns the circuit layer for spec ("" already replaced by
// the session's default) and its store's closer, and the store kind the
// transcript records ("off" when the session runs without circuits). A
// store that cannot be opened is logged and the session runs without
// circuits: a turn never depends on the store.
func openCircuits(spec, stateDir, version string, log *slog.Logger) (*circuit.Circuits, func() error, string) {
	var st circuit.Store
	switch spec = strings.TrimSpace(spec); {
	case spec == "off":
		return nil, nil, "off"
	case spec == storeMemory:
		st = newMemStore()
	default:
		if spec == "file" && stateDir == "" {
			d, err := policy.DefaultStateDir()
			if err != nil {
				log.Warn("circuits off: no state directory", "err", err)
				return nil, nil, "off"
			}
			stateDir = d
		}
		s, err := circuit.OpenStore(spec, stateDir, circuit.NATSOptions{Name: "acp-guard " + version})
		if err != nil {
			log.Warn("circuits off: store unavailable", "err", err)
			return nil, nil, "off"
		}
		st = s
		if spec != "file" {
			spec = "nats"
		}
	}
	return circuit.New(circuit.Config{Store: st, Logger: log}), st.Close, spec
}

// memStore is an in-memory circuit.Store: the circuits of one process,
// gone with it (replayed and served sessions, which must not touch the
// circuits live sessions share).
type memStore struct {
	mu   sync.Mutex
	seq  uint64
	recs map[string]memEntry
}

type memEntry struct {
	rev uint64
	rec circuit.Record
}

func newMemStore() *memStore { return &memStore{recs: map[string]memEntry{}} }

func (m *memStore) Get(_ context.Context, id string) (*circuit.Record, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.recs[id]
	if !ok {
		return nil, 0, nil
	}
	r := e.rec
	if e.rec.Lease != nil {
		l := *e.rec.Lease
		r.Lease = &l
	}
	return &r, e.rev, nil
}

func (m *memStore) CompareAndSwap(_ context.Context, id string, rec circuit.Record, rev uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs[id].rev != rev {
		return circuit.ErrConflict
	}
	m.seq++
	rec.Version = circuit.RecordVersion
	if rec.Lease != nil {
		l := *rec.Lease
		rec.Lease = &l
	}
	m.recs[id] = memEntry{rev: m.seq, rec: rec}
	return nil
}

func (m *memStore) List(context.Context) ([]circuit.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]circuit.Record, 0, len(m.recs))
	for _, e := range m.recs {
		out = append(out, e.rec)
	}
	return out, nil
}

func (m *memStore) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, id)
	return nil
}

func (m *memStore) Close() error { return nil }
