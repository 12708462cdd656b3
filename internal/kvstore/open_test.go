package kvstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/natstest"
)

func TestParseSpec(t *testing.T) {
	for spec, want := range map[string]Kind{
		"": KindFile, " file ": KindFile, "off": KindOff, "memory\n": KindMemory,
		"nats://127.0.0.1:4222": KindNATS, "tls://a:4222,tls://b:4222": KindNATS,
	} {
		kind, trimmed, err := ParseSpec(spec)
		if kind != want || trimmed != strings.TrimSpace(spec) || err != nil {
			t.Errorf("ParseSpec(%q) = %q, %q, %v; want %q", spec, kind, trimmed, err, want)
		}
	}
	for _, spec := range []string{"redis://user:hunter2@host", "File", "nats:/x", "offline"} {
		kind, _, err := ParseSpec(spec)
		if kind != "" || err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseSpec(%q) = %q, %v; want an error without the password", spec, kind, err)
		}
	}
}

func TestParseSpecNamesTheBackends(t *testing.T) {
	_, _, err := ParseSpec("redis://host")
	if want := `circuits "redis://host": want off, file, memory or a nats:// URL`; err == nil || err.Error() != want {
		t.Fatalf("ParseSpec(redis) = %v, want %s", err, want)
	}
}

func TestOpenEveryBackend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	view := Schema{What: "test store", File: testFile, NATS: NATSOptions{Bucket: "test_open", MaxValue: 1 << 10}}
	shared := view
	shared.Shared = true
	url := natstest.Start(t).URL()
	for _, tt := range []struct {
		spec   string
		s      Schema
		o      Options
		wantOK func(Store) bool
	}{
		{"", view, Options{Dir: dir}, func(st Store) bool { _, ok := st.(*File); return ok }},
		{" file ", view, Options{DefaultDir: func() (string, error) { return dir, nil }}, func(st Store) bool { f, ok := st.(*File); return ok && f.Path() == filepath.Join(dir, testFile.Name) }},
		{"memory", view, Options{}, func(st Store) bool { _, ok := st.(*Memory); return ok }},
		{"memory", shared, Options{}, func(st Store) bool { return st == nil }},
		{"off", view, Options{}, func(st Store) bool { return st == nil }},
		{url, shared, Options{}, func(st Store) bool { n, ok := st.(*NATS); return ok && n.String() == "nats bucket test_open" }},
		{url, shared, Options{Bucket: "other"}, func(st Store) bool { n, ok := st.(*NATS); return ok && n.String() == "nats bucket other" }},
	} {
		st, err := Open(tt.spec, tt.s, tt.o)
		if err != nil || !tt.wantOK(st) {
			t.Errorf("Open(%q, shared %v) = %T %v, %v", tt.spec, tt.s.Shared, st, st, err)
		}
		if st != nil {
			st.Close()
		}
	}
	// A store that cannot be opened: an error in the view's terms, and no
	// store (not a backend's typed nil).
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	st, err := Open("file", view, Options{Dir: link})
	if st != nil || err == nil || !strings.HasPrefix(err.Error(), "test store: ") {
		t.Fatalf("Open(file through a symlink) = %#v, %v; want nil and a test store error", st, err)
	}
	if _, err := Open("file", view, Options{DefaultDir: func() (string, error) { return "", errors.New("no home") }}); err == nil {
		t.Fatal("Open(file) without a state directory: no error")
	}
}

// TestShareOneConnection: the stores of one process share the connection
// Share dialed, and closing them leaves it open for the closer.
func TestShareOneConnection(t *testing.T) {
	url := natstest.Start(t).URL()
	o, closeConn, err := Share(url, Options{Name: "share test"})
	if err != nil || o.Conn == nil {
		t.Fatalf("Share(nats) = %+v, %v", o, err)
	}
	for _, bucket := range []string{"a", "b"} {
		st, err := Open(url, Schema{NATS: NATSOptions{Bucket: bucket}}, o)
		if err != nil {
			t.Fatal(err)
		}
		if st.(*NATS).Conn() != o.Conn {
			t.Errorf("bucket %s: its own connection, want the shared one", bucket)
		}
		st.Close()
	}
	if o.Conn.IsClosed() {
		t.Fatal("closing a store closed the shared connection")
	}
	closeConn()
	if !o.Conn.IsClosed() {
		t.Fatal("the closer left the connection open")
	}
	if o2, closeNone, err := Share("file", Options{Dir: "x"}); err != nil || o2.Dir != "x" || o2.Conn != nil || closeNone() != nil {
		t.Fatalf("Share(file) = %+v, %v; want the options unchanged", o2, err)
	}
}

// TestRegister: a backend a test adds is named by specs, listed in the
// refusal, opened by Open, and gone once unregistered.
func TestRegister(t *testing.T) {
	unregister := Register(Backend{Kind: "toy", Want: "a toy:// name",
		Match: func(spec string) bool { return strings.HasPrefix(spec, "toy://") },
		Open:  func(string, Schema, Options) (Store, error) { return NewMemory(), nil }})
	if kind, _, err := ParseSpec("toy://x"); kind != "toy" || err != nil {
		t.Fatalf("ParseSpec(toy) = %q, %v", kind, err)
	}
	if _, _, err := ParseSpec("redis://x"); err == nil || !strings.HasSuffix(err.Error(), "a nats:// URL or a toy:// name") {
		t.Fatalf("ParseSpec(redis) = %v, want the toy backend listed", err)
	}
	if st, err := Open("toy://x", Schema{Shared: true}, Options{}); err != nil || st == nil || !Shared("toy://x") {
		t.Fatalf("Open(toy) = %v, %v", st, err)
	}
	unregister()
	if _, _, err := ParseSpec("toy://x"); err == nil {
		t.Fatal("ParseSpec(toy) after unregister: no error")
	}
}
