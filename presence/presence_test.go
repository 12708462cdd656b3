package presence_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/natstest"
	"github.com/acp-guard/acp-guard/presence"
)

var epoch = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// clock is a settable now for the publisher's stamps.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func TestBeatWithinJitter(t *testing.T) {
	for _, tt := range []struct {
		u    float64
		want time.Duration
	}{{0, 4 * time.Second}, {0.5, 5 * time.Second}, {0.999999, 6 * time.Second}} {
		if got := presence.Beat(5*time.Second, 0.2, tt.u); got.Round(time.Millisecond) != tt.want {
			t.Errorf("Beat(5s, 0.2, %v) = %v, want %v", tt.u, got, tt.want)
		}
	}
}

// await polls the store (a hang guard bounds it, never a timing
// assertion) until cond holds of what Get returns under key.
func await(t *testing.T, st *presence.Store, key string, what string, cond func(*presence.Record) bool) *presence.Record {
	t.Helper()
	guard := time.Now().Add(30 * time.Second)
	for {
		r, _, err := st.Get(context.Background(), key)
		if err == nil && cond(r) {
			return r
		}
		if time.Now().After(guard) {
			t.Fatalf("%s: never (last %+v, %v)", what, r, err)
		}
		time.Sleep(5 * time.Millisecond) // between readings only
	}
}

func stores(t *testing.T) map[string]func(t *testing.T) *presence.Store {
	return map[string]func(t *testing.T) *presence.Store{
		"file": func(t *testing.T) *presence.Store {
			st, err := presence.OpenStore("file", presence.Options{Dir: filepath.Join(t.TempDir(), "state")})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"nats": func(t *testing.T) *presence.Store {
			st, err := presence.OpenStore(natstest.Start(t).URL(), presence.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"memory": func(*testing.T) *presence.Store { return presence.NewMemoryStore() },
	}
}

// A publisher's record is live from its first write until its lease runs
// out — at heartbeat + Lease exactly — is rewritten after a change, and
// is gone at once after Close. Every store.
func TestPublisherLeaseAndClose(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			defer st.Close()
			clk := &clock{t: epoch}
			p, err := presence.Start(presence.Config{Store: st, Holder: "host/42/1", Host: "host", PID: 42, Agent: "codex-acp",
				Every: time.Hour, MinGap: time.Nanosecond, Now: clk.now, Rand: func() float64 { return 0.5 }})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			r := await(t, st, p.Key(), "the first write", func(r *presence.Record) bool { return r != nil })
			if r.State != presence.StateStarting || r.Agent != "codex-acp" || !r.Heartbeat.Equal(epoch) || !r.Expires.Equal(epoch.Add(presence.Lease)) {
				t.Errorf("first record %+v", r)
			}
			prefix, _ := presence.Prefix("default")
			live := func(now time.Time) int {
				recs, err := st.Live(context.Background(), prefix, now)
				if err != nil {
					t.Fatal(err)
				}
				return len(recs)
			}
			if n := live(epoch.Add(presence.Lease - time.Nanosecond)); n != 1 {
				t.Errorf("live just before the lease ends: %d records, want 1", n)
			}
			if n := live(epoch.Add(presence.Lease)); n != 0 {
				t.Errorf("live when the lease ends: %d records, want 0", n)
			}

			later := epoch.Add(10 * time.Second)
			clk.set(later)
			p.Update(func(r *presence.Record) {
				r.State, r.Turn, r.Model, r.SessionID = "retry_wait", 1, "gpt-5", "sess-1"
				r.Count("provider_overloaded", "transient", later)
			})
			r = await(t, st, p.Key(), "the change written", func(r *presence.Record) bool { return r != nil && r.State == "retry_wait" })
			if r.Turn != 1 || r.Model != "gpt-5" || !r.Expires.Equal(later.Add(presence.Lease)) ||
				len(r.Errors) != 1 || r.Errors[0].N != 1 || r.Errors[0].Slot != presence.SlotOf(later) {
				t.Errorf("after the change %+v", r)
			}
			if n := live(epoch.Add(presence.Lease)); n != 1 {
				t.Errorf("the heartbeat did not extend the lease")
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if r, _, err := st.Get(context.Background(), p.Key()); r != nil || err != nil {
				t.Errorf("after Close: %+v, %v; want no record", r, err)
			}
		})
	}
}

// Errors are counted per slot and kept for the window only, at most
// MaxErrors rows; strings are clipped and control characters replaced.
func TestRecordErrorsAndBounds(t *testing.T) {
	var r presence.Record
	r.Count("provider_overloaded", "transient", epoch)
	r.Count("provider_overloaded", "transient", epoch.Add(time.Second))
	r.Count("rate_limited", "transient", epoch)
	if len(r.Errors) != 2 || r.Errors[0].N != 2 {
		t.Fatalf("errors %+v, want 2 rows, the first counted twice", r.Errors)
	}
	r.Prune(epoch.Add(presence.Window - presence.SlotWidth))
	if len(r.Errors) != 2 {
		t.Errorf("pruned inside the window: %+v", r.Errors)
	}
	r.Prune(epoch.Add(presence.Window + presence.SlotWidth))
	if len(r.Errors) != 0 {
		t.Errorf("kept beyond the window: %+v", r.Errors)
	}
	for i := range presence.MaxErrors + 5 {
		r.Count(strings.Repeat("c", i+1), "transient", epoch)
	}
	if len(r.Errors) != presence.MaxErrors {
		t.Errorf("%d rows, want %d", len(r.Errors), presence.MaxErrors)
	}
	r = presence.Record{Agent: "a\x1b[31m" + strings.Repeat("é", 300), SessionID: "s\n"}
	r.Bound()
	if len(r.Agent) > 256 || strings.ContainsAny(r.Agent, "\x1b") || r.SessionID != "s?" {
		t.Errorf("bounded record %q %q", r.Agent, r.SessionID)
	}
}

// The file store is 0600 in a 0700 directory, and a state directory that
// is a symbolic link is refused.
func TestFileStorePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	st, err := presence.OpenStore("file", presence.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key, _ := presence.Key("default", "h/1/1")
	if err := st.Put(context.Background(), key, presence.Record{Version: presence.Version, Holder: "h/1/1", Expires: epoch}, 0); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, presence.FileName): 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %o", path, fi.Mode().Perm(), err, want)
		}
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if st, err := presence.OpenStore("file", presence.Options{Dir: link}); err == nil {
		st.Close()
		t.Errorf("a state directory through a symbolic link was opened")
	}
}

// A store that cannot be reached costs the session nothing: Update does
// not block, the failure is logged once, Close returns.
func TestPublisherStoreDown(t *testing.T) {
	st, err := presence.OpenStore(natstest.DeadURL(t), presence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var logs syncBuffer
	p, err := presence.Start(presence.Config{Store: st, Holder: "h/1/1", MinGap: time.Nanosecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		p.Update(func(r *presence.Record) { r.Turn = i })
	}
	guard := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "presence store unavailable") {
		if time.Now().After(guard) {
			t.Fatalf("no failure logged: %q", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.Close()
	if n := strings.Count(logs.String(), "presence store unavailable"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
