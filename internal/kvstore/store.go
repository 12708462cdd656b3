package kvstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Item is a stored value with its key and revision.
type Item struct {
	Key   string
	Rev   uint64
	Value []byte
}

// Store keeps opaque values by key, with a revision per value so that
// every change is a compare-and-swap. Implementations: File (one document
// in a directory), NATS (a JetStream key-value bucket) and Memory (this
// process). All methods are safe for concurrent use. A caller must not
// modify a Value it was handed.
type Store interface {
	// Get returns the value stored under key and its revision, or
	// (nil, 0, nil) when there is none.
	Get(ctx context.Context, key string) ([]byte, uint64, error)
	// CompareAndSwap stores value under key if the stored revision is
	// still rev (0: if there is no value), else fails with ErrConflict.
	CompareAndSwap(ctx context.Context, key string, value []byte, rev uint64) error
	// List returns every item whose key starts with prefix, in key order.
	List(ctx context.Context, prefix string) ([]Item, error)
	// Delete removes the value under key (none there: no error).
	Delete(ctx context.Context, key string) error
	// Watch calls fn, from a goroutine of the store's, with the items
	// under prefix that may have changed since the last call (at least
	// every changed one; deletions are not passed), until stop is called.
	// stop waits for that goroutine; fn must not call stop.
	Watch(prefix string, fn func(Item)) (stop func(), err error)
	Close() error
}

// ErrConflict is returned by CompareAndSwap when the value changed since it
// was read (or a file store's lock was held by other writers for the whole
// call: contention, not failure).
var ErrConflict = errors.New("changed concurrently")

// ErrFormat is what a *FormatError is: a file store's document is
// well-formed but of another format (a newer acp-guard may own it), so it
// is neither read nor overwritten.
var ErrFormat = errors.New("unsupported document format")

// FormatError names the document of another format and both formats.
type FormatError struct {
	Path         string
	Format, Want string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: format %q, want %q", e.Path, e.Format, e.Want)
}

// Is makes errors.Is(err, ErrFormat) true.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

// sortItems orders items by key, as List returns them.
func sortItems(items []Item) []Item {
	slices.SortFunc(items, func(a, b Item) int { return cmp.Compare(a.Key, b.Key) })
	return items
}

// under reports whether key is under prefix.
func under(key, prefix string) bool { return strings.HasPrefix(key, prefix) }

// pollWatch runs the watch of a store that has no change feed of its own
// (File, Memory): next blocks until it is time to look again and reports
// whether anything may have changed (false when done is closed: the loop
// ends); list reads the items under the watch's prefix. Items whose
// revision the watch has not passed yet go to fn. The goroutine is the
// watch's; the returned stop ends it and waits for it.
func pollWatch(next func(done <-chan struct{}) (look, ok bool), list func() ([]Item, error), fn func(Item)) func() {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		seen := map[string]uint64{}
		for look, ok := true, true; ok; look, ok = next(done) {
			if !look {
				continue
			}
			items, err := list()
			if err != nil {
				continue // looked at again on the next change
			}
			for _, it := range items {
				if seen[it.Key] != it.Rev {
					seen[it.Key] = it.Rev
					fn(it)
				}
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-exited }) }
}
