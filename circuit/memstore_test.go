package circuit

import (
	"context"
	"sync"
)

// memStore is an in-memory Store for the state-logic tests. fail, when set,
// makes every call fail with it; calls counts store calls.
type memStore struct {
	mu    sync.Mutex
	seq   uint64
	recs  map[string]memEntry
	fail  error
	calls int
	puts  int
}

type memEntry struct {
	rev uint64
	rec Record
}

func newMemStore() *memStore { return &memStore{recs: map[string]memEntry{}} }

func (m *memStore) Get(ctx context.Context, id string) (*Record, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.fail != nil {
		return nil, 0, m.fail
	}
	e, ok := m.recs[id]
	if !ok {
		return nil, 0, nil
	}
	r := e.rec
	if e.rec.Lease != nil {
		l := *e.rec.Lease
		r.Lease = &l
	}
	return &r, e.rev, checkVersion(r)
}

func (m *memStore) CompareAndSwap(ctx context.Context, id string, rec Record, rev uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.fail != nil {
		return m.fail
	}
	if m.recs[id].rev != rev {
		return ErrConflict
	}
	m.seq++
	m.puts++
	rec.Version = RecordVersion
	m.recs[id] = memEntry{rev: m.seq, rec: rec}
	return nil
}

func (m *memStore) List(ctx context.Context) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for _, e := range m.recs {
		out = append(out, e.rec)
	}
	return out, nil
}

func (m *memStore) Delete(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, id)
	return nil
}

func (m *memStore) Close() error { return nil }

func (m *memStore) setFail(err error) {
	m.mu.Lock()
	m.fail = err
	m.mu.Unlock()
}

func (m *memStore) counts() (calls, puts int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls, m.puts
}
