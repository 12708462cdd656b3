package circuit

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// memStore is the memory store for the state-logic tests, counting its
// calls: fail, when set, makes every call fail with it; calls counts store
// calls, puts the swaps that wrote.
type memStore struct {
	Store
	kv *kvstore.Memory

	mu    sync.Mutex
	fail  error
	calls int
	puts  int
}

func newMemStore() *memStore {
	kv := kvstore.NewMemory()
	return &memStore{Store: kvStore{records.Over(kv)}, kv: kv}
}

// called counts one call and returns the failure to answer with.
func (m *memStore) called() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	return m.fail
}

func (m *memStore) Get(ctx context.Context, id string) (*Record, uint64, error) {
	if err := m.called(); err != nil {
		return nil, 0, err
	}
	return m.Store.Get(ctx, id)
}

func (m *memStore) CompareAndSwap(ctx context.Context, id string, rec Record, rev uint64) error {
	if err := m.called(); err != nil {
		return err
	}
	err := m.Store.CompareAndSwap(ctx, id, rec, rev)
	if err == nil {
		m.mu.Lock()
		m.puts++
		m.mu.Unlock()
	}
	return err
}

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

// force stores rec under id as it is (its version too), over whatever is
// there: another writer's record.
func (m *memStore) force(t *testing.T, id string, rec Record) {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	_, rev, _ := m.kv.Get(context.Background(), id)
	if err := m.kv.CompareAndSwap(context.Background(), id, b, rev); err != nil {
		t.Fatal(err)
	}
}
