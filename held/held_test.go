package held

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/natstest"
)

var (
	ctx = context.Background()
	t0  = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
)

// entry is a held entry of session s at now.
func entry(s string, hold uint64, now time.Time) Entry {
	next := now.Add(time.Hour)
	return Entry{Namespace: "default", Holder: "h/1/1/" + s + "/2", Host: "h", PID: 1, SessionID: s, RequestID: "2",
		Agent: "codex-acp", Code: "provider_overloaded", Class: "transient", State: "retry_wait", Hold: hold,
		Since: now, Next: &next, Offered: []string{ActionRetryNow, ActionStop}, Expires: now.Add(TTL), UpdatedAt: now}
}

// stores runs f against a file store and a NATS store (a real
// nats-server with JetStream, in the test process).
func stores(t *testing.T, f func(t *testing.T, st Store)) {
	t.Run("file", func(t *testing.T) {
		st, err := OpenStore("file", Options{Dir: filepath.Join(t.TempDir(), "state")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f(t, st)
	})
	t.Run("nats", func(t *testing.T) {
		st, err := OpenStore(natstest.Start(t).URL(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f(t, st)
	})
}

func TestStoreCompareAndSwap(t *testing.T) {
	stores(t, func(t *testing.T, st Store) {
		pa, _ := ProcessPrefix("default", "h/1/1")
		pb, _ := ProcessPrefix("default", "h/2/1")
		other, _ := ProcessPrefix("tenant-b", "h/1/1")
		id := ID(pa, "s1", "2")
		if err := st.CompareAndSwap(ctx, id, entry("s1", 1, t0), 0); err != nil {
			t.Fatal(err)
		}
		if err := st.CompareAndSwap(ctx, id, entry("s1", 1, t0), 0); !errors.Is(err, ErrConflict) {
			t.Fatalf("create over an entry: %v, want ErrConflict", err)
		}
		got, rev, err := st.Get(ctx, id)
		if err != nil || got == nil || got.SessionID != "s1" || got.Version != EntryVersion || rev == 0 {
			t.Fatalf("Get = %+v, %d, %v", got, rev, err)
		}
		next := *got
		next.State = "parked"
		if err := st.CompareAndSwap(ctx, id, next, rev); err != nil {
			t.Fatal(err)
		}
		if err := st.CompareAndSwap(ctx, id, next, rev); !errors.Is(err, ErrConflict) {
			t.Fatalf("update at a stale revision: %v, want ErrConflict", err)
		}
		for _, e := range []struct{ id, s string }{{ID(pb, "s2", "2"), "s2"}, {ID(other, "s3", "2"), "s3"}} {
			if err := st.CompareAndSwap(ctx, e.id, entry(e.s, 1, t0), 0); err != nil {
				t.Fatal(err)
			}
		}
		ns, _ := NamespacePrefix("default")
		for prefix, want := range map[string]string{ns: "parked,retry_wait", pa: "parked", other: "retry_wait"} {
			list, err := st.List(ctx, prefix)
			var states []string
			for _, s := range list {
				states = append(states, s.Entry.State)
			}
			slices.Sort(states)
			if err != nil || strings.Join(states, ",") != want {
				t.Errorf("List(%s) = %v, %v; want %s", prefix, states, err, want)
			}
		}
	})
}

// A watch passes the changed entries under its prefix, and only those.
func TestStoreWatch(t *testing.T) {
	stores(t, func(t *testing.T, st Store) {
		mine, _ := ProcessPrefix("default", "h/1/1")
		theirs, _ := ProcessPrefix("default", "h/2/1")
		got := make(chan Stored, 16)
		stop, err := st.Watch(mine, func(s Stored) { got <- s })
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		if err := st.CompareAndSwap(ctx, ID(theirs, "s2", "2"), entry("s2", 1, t0), 0); err != nil {
			t.Fatal(err)
		}
		id := ID(mine, "s1", "2")
		if err := st.CompareAndSwap(ctx, id, entry("s1", 1, t0), 0); err != nil {
			t.Fatal(err)
		}
		s := <-got
		if s.ID != id || s.Entry.SessionID != "s1" {
			t.Fatalf("watched %+v, want s1's entry", s)
		}
		e, rev, _ := st.Get(ctx, id)
		e.Request = &Request{ID: "r1", Action: ActionStop, Hold: 1}
		if err := st.CompareAndSwap(ctx, id, *e, rev); err != nil {
			t.Fatal(err)
		}
		for s = range got {
			if s.Entry.Request != nil {
				break
			}
		}
		if s.Entry.Request.ID != "r1" {
			t.Fatalf("watched %+v, want the request", s.Entry.Request)
		}
		stop()
		select {
		case s := <-got:
			if s.Entry.SessionID == "s2" {
				t.Errorf("watched another process's entry")
			}
		default:
		}
	})
}

// The holder's writes keep an operator's request for the same hold until
// a write answers it; a request for an earlier hold is answered stale.
func TestBoardPutKeepsRequests(t *testing.T) {
	stores(t, func(t *testing.T, st Store) {
		b := NewBoard(st, nil)
		p, _ := ProcessPrefix("default", "h/1/1")
		id := ID(p, "s1", "2")
		if req, err := b.Put(ctx, id, entry("s1", 1, t0), t0); err != nil || req != nil {
			t.Fatalf("Put = %v, %v", req, err)
		}
		ns, _ := NamespacePrefix("default")
		list, err := b.Held(ctx, ns, t0)
		if err != nil || len(list) != 1 {
			t.Fatalf("Held = %v, %v", list, err)
		}
		if _, err := b.Ask(ctx, id, Request{ID: "r1", Action: ActionSkip}, t0); !errors.Is(err, ErrNotOffer) {
			t.Errorf("skip not offered: %v, want ErrNotOffer", err)
		}
		if _, err := b.Ask(ctx, id, Request{ID: "r1", Action: ActionStop, By: "operator"}, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Ask(ctx, id, Request{ID: "r2", Action: ActionRetryNow}, t0); !errors.Is(err, ErrBusy) {
			t.Errorf("second request: %v, want ErrBusy", err)
		}
		// A refresh keeps the request and hands it to the holder.
		refreshed := entry("s1", 1, t0.Add(time.Minute))
		if req, err := b.Put(ctx, id, refreshed, t0.Add(time.Minute)); err != nil || req == nil || req.ID != "r1" || req.Hold != 1 {
			t.Fatalf("refresh: request %+v, %v; want r1 for hold 1", req, err)
		}
		// The write that answers it clears it.
		done := entry("s1", 1, t0.Add(time.Minute))
		done.State, done.Result = "action_required", &Result{ID: "r1", Action: ActionStop, State: "action_required"}
		if req, err := b.Put(ctx, id, done, t0.Add(time.Minute)); err != nil || req != nil {
			t.Fatalf("answer: request %+v, %v; want none left", req, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if res, err := b.Await(wctx, id, "r1", time.Millisecond); err != nil || res.State != "action_required" {
			t.Errorf("Await = %+v, %v", res, err)
		}
		if _, err := b.Ask(ctx, id, Request{ID: "r3", Action: ActionStop}, t0.Add(time.Minute)); !errors.Is(err, ErrNotHeld) {
			t.Errorf("ask an ended prompt: %v, want ErrNotHeld", err)
		}
	})
}

func TestMergeStaleRequest(t *testing.T) {
	cur := entry("s1", 1, t0)
	cur.Request = &Request{ID: "r1", Action: ActionStop, Hold: 1}
	next := entry("s1", 2, t0) // a new hold began: the request is for the old one
	got := merge(&cur, next)
	if got.Request != nil || got.Result == nil || got.Result.ID != "r1" || !strings.Contains(got.Result.Error, "no longer in hold 1") {
		t.Errorf("merge = request %+v, result %+v; want r1 answered stale", got.Request, got.Result)
	}
	ended := entry("s1", 1, t0)
	ended.State = "retrying"
	if got := merge(&cur, ended); got.Request != nil || got.Result == nil || got.Result.Error == "" {
		t.Errorf("a hold that ended: request %+v, result %+v; want answered stale", got.Request, got.Result)
	}
}

// Expired entries are not held and are pruned by the next write; the
// document stays 0600.
func TestFileStorePrunesExpired(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	st, err := OpenStore("file", Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, _ := ProcessPrefix("default", "h/1/1")
	if err := st.CompareAndSwap(ctx, ID(p, "old", "2"), entry("old", 1, t0), 0); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(TTL + time.Second)
	if old := entry("old", 1, t0); old.Held(later) {
		t.Error("an expired entry reads as held")
	}
	if err := st.CompareAndSwap(ctx, ID(p, "new", "2"), entry("new", 1, later), 0); err != nil {
		t.Fatal(err)
	}
	list, _ := st.List(ctx, p)
	if len(list) != 1 || list[0].Entry.SessionID != "new" {
		t.Errorf("after a later write: %+v, want only the new entry", list)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("document mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

// A store that fails is logged once and left alone; its calls fail at
// once meanwhile, and nothing blocks.
func TestBoardStoreDown(t *testing.T) {
	st, err := OpenStore(natstest.DeadURL(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := NewBoard(st, nil)
	p, _ := ProcessPrefix("default", "h/1/1")
	if _, err := b.Put(ctx, ID(p, "s1", "2"), entry("s1", 1, t0), t0); !errors.Is(err, ErrStore) {
		t.Fatalf("Put to a dead server: %v, want ErrStore", err)
	}
	if _, err := b.Put(ctx, ID(p, "s1", "2"), entry("s1", 1, t0), t0.Add(100*time.Millisecond)); err == nil || !strings.Contains(err.Error(), "skipped") {
		t.Errorf("second Put within the retry wait: %v, want skipped", err)
	}
}

// TestFileStoreKeepsItsFormat: testdata/held-v1-before.json was written
// by the file store as it was before the stores shared internal/kvstore. This store reads it, and the same next write —
// s3 parked at its revision ten minutes later, which prunes the expired
// s1 — gives, byte for byte, the document that store wrote
// (held-v1-after.json).
func TestFileStoreKeepsItsFormat(t *testing.T) {
	before, err := os.ReadFile(filepath.Join("testdata", "held-v1-before.json"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(filepath.Join("testdata", "held-v1-after.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), before, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStore("file", Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, _ := ProcessPrefix("default", "h/1/1")
	list, err := st.List(ctx, p)
	var got []string
	for _, s := range list {
		got = append(got, s.Entry.SessionID)
	}
	slices.Sort(got)
	if err != nil || strings.Join(got, ",") != "s1,s2,s3" {
		t.Fatalf("List = %v, %v; want s1,s2,s3", got, err)
	}
	if e, _, err := st.Get(ctx, ID(p, "s2", "2")); err != nil || e.Request == nil || e.Request.ID != "r1" || e.Model != "m <beta> & co" {
		t.Fatalf("Get(s2) = %+v, %v", e, err)
	}
	e, rev, err := st.Get(ctx, ID(p, "s3", "2"))
	if err != nil || e == nil || rev != 3 || e.Result == nil || e.Result.State != "switching" {
		t.Fatalf("Get(s3) = %+v, %d, %v", e, rev, err)
	}
	e.State = "parked"
	e.UpdatedAt = t0.Add(10 * time.Minute)
	e.Expires = e.UpdatedAt.Add(TTL)
	if err := st.CompareAndSwap(ctx, ID(p, "s3", "2"), *e, rev); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, FileName)); string(b) != string(after) {
		t.Fatalf("document after the write:\n%s\nwant (as the earlier store wrote it):\n%s", b, after)
	}
}
