package kvstore

import (
	"bytes"
	"context"
	"sync"
)

// Memory keeps values in this process only, gone with it: the store of
// replayed and served sessions (which must not touch what live sessions
// share) and of tests. Revisions come from one counter, so a deleted and
// re-created key never reuses one.
type Memory struct {
	mu    sync.Mutex
	seq   uint64
	items map[string]Item
	wakes map[chan struct{}]struct{} // one per watch, signalled on every change
}

// NewMemory returns an empty memory store.
func NewMemory() *Memory {
	return &Memory{items: map[string]Item{}, wakes: map[chan struct{}]struct{}{}}
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, key string) ([]byte, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.items[key]
	if !ok {
		return nil, 0, nil
	}
	return bytes.Clone(it.Value), it.Rev, nil
}

// CompareAndSwap implements Store.
func (m *Memory) CompareAndSwap(_ context.Context, key string, value []byte, rev uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.items[key].Rev != rev {
		return ErrConflict
	}
	m.seq++
	m.items[key] = Item{Key: key, Rev: m.seq, Value: bytes.Clone(value)}
	m.changed()
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.items, key)
	m.changed()
	return nil
}

// List implements Store.
func (m *Memory) List(_ context.Context, prefix string) ([]Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Item
	for _, it := range m.items {
		if under(it.Key, prefix) {
			it.Value = bytes.Clone(it.Value)
			out = append(out, it)
		}
	}
	return sortItems(out), nil
}

// changed wakes every watch (m.mu held).
func (m *Memory) changed() {
	for w := range m.wakes {
		select {
		case w <- struct{}{}:
		default: // already woken: it will list everything anyway
		}
	}
}

// Watch implements Store: a goroutine lists the items under prefix after
// every change and passes those whose revision it has not passed yet.
// stop ends the goroutine and waits for it.
func (m *Memory) Watch(prefix string, fn func(Item)) (func(), error) {
	wake := make(chan struct{}, 1)
	m.mu.Lock()
	m.wakes[wake] = struct{}{}
	m.mu.Unlock()
	next := func(done <-chan struct{}) (bool, bool) {
		select {
		case <-done:
			m.mu.Lock()
			delete(m.wakes, wake)
			m.mu.Unlock()
			return false, false
		case <-wake:
			return true, true
		}
	}
	return pollWatch(next, func() ([]Item, error) { return m.List(context.Background(), prefix) }, fn), nil
}

// Close implements Store; the values stay readable (nothing to release).
func (m *Memory) Close() error { return nil }

// memoryBackend: "memory", a new Memory per store.
var memoryBackend = Backend{
	Kind: KindMemory, Want: string(KindMemory), Local: true,
	Match: func(spec string) bool { return spec == string(KindMemory) },
	Open:  func(string, Schema, Options) (Store, error) { return NewMemory(), nil },
}

// String says where the store keeps its values.
func (m *Memory) String() string { return "memory" }
