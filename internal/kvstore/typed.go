package kvstore

import (
	"context"
	"errors"
	"fmt"
)

// View is one client package's values (circuit records, held entries,
// presence records) over any backend: its Schema (where they are kept),
// their encoding, and its errors — ErrConflict said as Conflict, a
// *FormatError wrapped in Format, any other error prefixed with
// Schema.What. A client package declares one and embeds what Open
// returns in its own Store, adding what differs (List's shape).
type View[T any] struct {
	Schema
	Encode func(T) ([]byte, error)
	// Decode parses a stored value; an error means a value of another
	// format: Get returns it, List and Watch skip the value.
	Decode   func([]byte) (T, error)
	Conflict error // the package's ErrConflict
	Format   error // the package's ErrFormat
}

// Open opens the view's store that spec names (the package's Open): nil,
// nil where spec names none for it.
func (v *View[T]) Open(spec string, o Options) (*Typed[T], error) {
	kv, err := Open(spec, v.Schema, o)
	if kv == nil {
		return nil, err
	}
	return v.Over(kv), nil
}

// Over is the view over the store kv.
func (v *View[T]) Over(kv Store) *Typed[T] { return &Typed[T]{KV: kv, v: v} }

// Typed is a Store of one view's values.
type Typed[T any] struct {
	KV Store
	v  *View[T]
}

// Entry is a decoded item.
type Entry[T any] struct {
	Key   string
	Rev   uint64
	Value T
}

// Get returns the value under key and its revision, or (nil, 0, nil).
func (s *Typed[T]) Get(ctx context.Context, key string) (*T, uint64, error) {
	b, rev, err := s.KV.Get(ctx, key)
	if err != nil || b == nil {
		return nil, 0, s.Err(err)
	}
	v, err := s.v.Decode(b)
	if err != nil {
		return nil, 0, err
	}
	return &v, rev, nil
}

// CompareAndSwap stores v under key at revision rev (0: absent).
func (s *Typed[T]) CompareAndSwap(ctx context.Context, key string, v T, rev uint64) error {
	b, err := s.v.Encode(v)
	if err != nil {
		return fmt.Errorf("%s: encoding: %w", s.v.What, err)
	}
	return s.Err(s.KV.CompareAndSwap(ctx, key, b, rev))
}

// List returns the values under prefix in key order, skipping those of
// another format.
func (s *Typed[T]) List(ctx context.Context, prefix string) ([]Entry[T], error) {
	items, err := s.KV.List(ctx, prefix)
	if err != nil {
		return nil, s.Err(err)
	}
	out := make([]Entry[T], 0, len(items))
	for _, it := range items {
		if e, ok := s.decode(it); ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// Watch passes the changed values under prefix to fn (Store.Watch),
// skipping those of another format.
func (s *Typed[T]) Watch(prefix string, fn func(Entry[T])) (func(), error) {
	stop, err := s.KV.Watch(prefix, func(it Item) {
		if e, ok := s.decode(it); ok {
			fn(e)
		}
	})
	return stop, s.Err(err)
}

func (s *Typed[T]) decode(it Item) (Entry[T], bool) {
	v, err := s.v.Decode(it.Value)
	return Entry[T]{Key: it.Key, Rev: it.Rev, Value: v}, err == nil
}

// Delete removes the value under key.
func (s *Typed[T]) Delete(ctx context.Context, key string) error {
	return s.Err(s.KV.Delete(ctx, key))
}

// Close closes the store.
func (s *Typed[T]) Close() error { return s.KV.Close() }

// Err says a Store's error in the package's terms (nil stays nil).
func (s *Typed[T]) Err(err error) error {
	var ferr *FormatError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrConflict):
		return s.v.Conflict
	case errors.As(err, &ferr):
		return fmt.Errorf("%w: %w", s.v.Format, ferr)
	}
	return fmt.Errorf("%s: %w", s.v.What, err)
}

// Reconnects is how many times the backend's connection came back after
// a loss (kvstore.Health follows it); 0 for a backend without one.
func (s *Typed[T]) Reconnects() uint64 {
	if rc, ok := s.KV.(interface{ Reconnects() uint64 }); ok {
		return rc.Reconnects()
	}
	return 0
}

// String says where the store keeps its values (the backend's String).
func (s *Typed[T]) String() string { return fmt.Sprint(s.KV) }
