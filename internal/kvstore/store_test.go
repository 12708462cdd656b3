package kvstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/natstest"
)

var ctx = context.Background()

// testFile is a file store's options for the tests.
var testFile = FileOptions{Name: "doc.json", LockName: "doc.lock", Format: "test.doc/1", Member: "value", Poll: 10 * time.Millisecond}

func openFile(t testing.TB, dir string, o FileOptions) *File {
	t.Helper()
	s, err := OpenFile(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openNATS(t testing.TB, url string, o NATSOptions) *NATS {
	t.Helper()
	if o.Bucket == "" {
		o.Bucket = "test_bucket"
	}
	s, err := OpenNATS(url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// backends runs f against each store: a file document, a NATS bucket on a
// real server, memory.
func backends(t *testing.T, f func(t *testing.T, st Store)) {
	t.Run("file", func(t *testing.T) { f(t, openFile(t, filepath.Join(t.TempDir(), "state"), testFile)) })
	t.Run("nats", func(t *testing.T) { f(t, openNATS(t, natstest.Start(t).URL(), NATSOptions{})) })
	t.Run("memory", func(t *testing.T) { f(t, NewMemory()) })
}

func mustGet(t *testing.T, st Store, key string) (string, uint64) {
	t.Helper()
	b, rev, err := st.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	return string(b), rev
}

func TestCompareAndSwap(t *testing.T) {
	backends(t, func(t *testing.T, st Store) {
		if v, rev := mustGet(t, st, "a.1"); v != "" || rev != 0 {
			t.Fatalf("Get of a missing key = %q, %d", v, rev)
		}
		if err := st.CompareAndSwap(ctx, "a.1", []byte(`{"n":1}`), 0); err != nil {
			t.Fatal(err)
		}
		if err := st.CompareAndSwap(ctx, "a.1", []byte(`{"n":9}`), 0); !errors.Is(err, ErrConflict) {
			t.Fatalf("create over a value: %v, want ErrConflict", err)
		}
		v, rev := mustGet(t, st, "a.1")
		if v != `{"n":1}` || rev == 0 {
			t.Fatalf("Get = %q, %d", v, rev)
		}
		if err := st.CompareAndSwap(ctx, "a.1", []byte(`{"n":2}`), rev); err != nil {
			t.Fatal(err)
		}
		if err := st.CompareAndSwap(ctx, "a.1", []byte(`{"n":3}`), rev); !errors.Is(err, ErrConflict) {
			t.Fatalf("update at a stale revision: %v, want ErrConflict", err)
		}
		v2, rev2 := mustGet(t, st, "a.1")
		if v2 != `{"n":2}` || rev2 <= rev {
			t.Fatalf("after the update: %q at %d, want {\"n\":2} after %d", v2, rev2, rev)
		}
		if err := st.Delete(ctx, "a.1"); err != nil {
			t.Fatal(err)
		}
		if err := st.Delete(ctx, "a.1"); err != nil {
			t.Fatalf("deleting a missing key: %v", err)
		}
		if v, rev := mustGet(t, st, "a.1"); v != "" || rev != 0 {
			t.Fatalf("Get after Delete = %q, %d", v, rev)
		}
		if err := st.CompareAndSwap(ctx, "a.1", []byte(`{"n":1}`), rev2); !errors.Is(err, ErrConflict) {
			t.Fatalf("update of a deleted key: %v, want ErrConflict", err)
		}
		if err := st.CompareAndSwap(ctx, "a.1", []byte(`{"n":4}`), 0); err != nil {
			t.Fatalf("create over a deleted key: %v", err)
		}
		// A re-created key never reuses a revision: a swap at the old one
		// cannot land on the new value.
		if _, rev3 := mustGet(t, st, "a.1"); rev3 <= rev2 {
			t.Fatalf("re-created at revision %d, not after %d", rev3, rev2)
		}
	})
}

func TestListByPrefix(t *testing.T) {
	backends(t, func(t *testing.T, st Store) {
		if items, err := st.List(ctx, "h."); err != nil || len(items) != 0 {
			t.Fatalf("List of an empty store = %v, %v", items, err)
		}
		for _, k := range []string{"h.b.2", "h.a.1", "h.ab.3", "ns.x.1", "h.a.2"} {
			if err := st.CompareAndSwap(ctx, k, []byte(`"`+k+`"`), 0); err != nil {
				t.Fatal(err)
			}
		}
		for prefix, want := range map[string]string{
			"":      "h.a.1 h.a.2 h.ab.3 h.b.2 ns.x.1",
			"h.":    "h.a.1 h.a.2 h.ab.3 h.b.2",
			"h.a.":  "h.a.1 h.a.2",
			"h.a":   "h.a.1 h.a.2 h.ab.3", // a prefix may end inside a token
			"ns.x.": "ns.x.1",
			"q.":    "",
		} {
			items, err := st.List(ctx, prefix)
			var got []string
			for _, it := range items {
				if string(it.Value) != `"`+it.Key+`"` || it.Rev == 0 {
					t.Errorf("List(%q): item %+v", prefix, it)
				}
				got = append(got, it.Key)
			}
			if err != nil || strings.Join(got, " ") != want {
				t.Errorf("List(%q) = %v, %v; want %s", prefix, got, err, want)
			}
		}
	})
}

// A watch passes the values that change under its prefix, and only those;
// stop ends it.
func TestWatch(t *testing.T) {
	backends(t, func(t *testing.T, st Store) {
		got := make(chan Item, 16)
		stop, err := st.Watch("h.mine.", func(it Item) { got <- it })
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		if err := st.CompareAndSwap(ctx, "h.theirs.1", []byte(`1`), 0); err != nil {
			t.Fatal(err)
		}
		if err := st.CompareAndSwap(ctx, "h.mine.1", []byte(`1`), 0); err != nil {
			t.Fatal(err)
		}
		it := <-got // the test's timeout is the hang guard
		if it.Key != "h.mine.1" || string(it.Value) != "1" {
			t.Fatalf("watched %+v, want h.mine.1", it)
		}
		if err := st.CompareAndSwap(ctx, "h.mine.1", []byte(`2`), it.Rev); err != nil {
			t.Fatal(err)
		}
		for it = range got {
			if string(it.Value) == "2" {
				break
			}
		}
		stop()
		stop()     // again: nothing
		close(got) // fn is never called after stop returned (a send would panic)
		for it := range got {
			if it.Key != "h.mine.1" {
				t.Errorf("watched %+v, outside the prefix", it)
			}
		}
	})
}

// Concurrent writers of one key: every swap that succeeded saw the value
// the previous one wrote (no lost update).
func TestNoLostUpdate(t *testing.T) {
	backends(t, func(t *testing.T, st Store) {
		const writers, each = 4, 10
		errs := make(chan error, writers)
		for w := range writers {
			go func() {
				n := 0
				for n < each {
					b, rev, err := st.Get(ctx, "c.1")
					if err != nil {
						errs <- err
						return
					}
					var v int
					fmt.Sscan(string(b), &v)
					err = st.CompareAndSwap(ctx, "c.1", fmt.Appendf(nil, "%d", v+1), rev)
					if errors.Is(err, ErrConflict) {
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("writer %d: %w", w, err)
						return
					}
					n++
				}
				errs <- nil
			}()
		}
		for range writers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if v, _ := mustGet(t, st, "c.1"); v != fmt.Sprint(writers*each) {
			t.Fatalf("counter = %s, want %d", v, writers*each)
		}
	})
}
