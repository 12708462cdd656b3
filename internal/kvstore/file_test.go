package kvstore

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/acp-guard/acp-guard/internal/platform"
)

func TestFilePermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "acp-guard")
	s := openFile(t, dir, testFile)
	if err := s.CompareAndSwap(ctx, "k", []byte(`1`), 0); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		dir: 0o700, filepath.Dir(dir): 0o700,
		s.Path(): 0o600, filepath.Join(dir, testFile.LockName): 0o600,
	} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", path, got, want)
		}
	}
	// A second handle (another process, in effect) sees the same value.
	if v, rev := mustGet(t, openFile(t, dir, testFile), "k"); v != "1" || rev != 1 {
		t.Fatalf("second handle: %q at %d", v, rev)
	}
}

func TestFileRefusesSymlinks(t *testing.T) {
	for _, name := range []string{testFile.Name, testFile.LockName} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(target, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			s := openFile(t, dir, testFile)
			if err := s.CompareAndSwap(ctx, "k", []byte(`1`), 0); !errors.Is(err, platform.ELOOP) {
				t.Fatalf("write through a symlinked %s: %v, want ELOOP", name, err)
			}
			if b, _ := os.ReadFile(target); string(b) != "keep me" {
				t.Fatalf("symlink target changed: %q", b)
			}
		})
	}
	t.Run("directory", func(t *testing.T) {
		real := t.TempDir()
		link := filepath.Join(t.TempDir(), "state")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenFile(link, testFile); err == nil {
			t.Fatal("a symlinked state directory was accepted")
		}
	})
}

func TestFileCorruptDocumentReadsEmptyAndIsReplaced(t *testing.T) {
	for name, content := range map[string]string{
		"not json":  "{not json",
		"torn":      `{"format":"test.doc/1","seq":3,"entries":{"k":{"rev":3,"val`,
		"too large": `{"format":"test.doc/1","seq":1,"entries":{"k":{"rev":1,"value":"` + strings.Repeat("x", 200) + `"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			o := testFile
			o.MaxBytes = 128
			s := openFile(t, dir, o)
			if err := os.WriteFile(s.Path(), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if v, rev := mustGet(t, s, "k"); v != "" || rev != 0 {
				t.Fatalf("Get from a corrupt document = %q, %d", v, rev)
			}
			if items, err := s.List(ctx, ""); err != nil || len(items) != 0 {
				t.Fatalf("List of a corrupt document = %v, %v", items, err)
			}
			if err := s.CompareAndSwap(ctx, "k", []byte(`2`), 0); err != nil {
				t.Fatalf("write over a corrupt document: %v", err)
			}
			if v, _ := mustGet(t, s, "k"); v != "2" {
				t.Fatalf("after the write: %q", v)
			}
		})
	}
}

func TestFileLeavesAForeignFormatAlone(t *testing.T) {
	dir := t.TempDir()
	s := openFile(t, dir, testFile)
	foreign := `{"format":"test.doc/2","entries":{"k":{"rev":1,"value":1}}}`
	if err := os.WriteFile(s.Path(), []byte(foreign), 0o600); err != nil {
		t.Fatal(err)
	}
	var ferr *FormatError
	if _, _, err := s.Get(ctx, "k"); !errors.Is(err, ErrFormat) || !errors.As(err, &ferr) || ferr.Format != "test.doc/2" {
		t.Fatalf("Get: %v, want a FormatError naming test.doc/2", err)
	}
	if _, err := s.List(ctx, ""); !errors.Is(err, ErrFormat) {
		t.Fatalf("List: %v, want ErrFormat", err)
	}
	if err := s.CompareAndSwap(ctx, "k", []byte(`2`), 0); !errors.Is(err, ErrFormat) {
		t.Fatalf("CompareAndSwap: %v, want ErrFormat", err)
	}
	if b, _ := os.ReadFile(s.Path()); string(b) != foreign {
		t.Fatalf("a document of another format was overwritten: %s", b)
	}
}

// Other writers holding the lock for a whole call is contention: a
// conflict, not a failed store.
func TestFileBusyLockIsAConflict(t *testing.T) {
	dir := t.TempDir()
	s := openFile(t, dir, testFile)
	other := flock.New(filepath.Join(dir, testFile.LockName))
	if err := other.Lock(); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := s.CompareAndSwap(cctx, "k", []byte(`1`), 0); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("write under another's lock: %v, want a busy ErrConflict", err)
	}
	other.Unlock()
	if err := s.CompareAndSwap(ctx, "k", []byte(`1`), 0); err != nil {
		t.Fatalf("write once the lock is free: %v", err)
	}
}

func TestFileRefusesAValueThatIsNotJSON(t *testing.T) {
	s := openFile(t, t.TempDir(), testFile)
	for _, v := range []string{`{"a":`, `null`, ``} {
		if err := s.CompareAndSwap(ctx, "k", []byte(v), 0); err == nil {
			t.Fatalf("value %q was stored", v)
		}
	}
	if err := s.CompareAndSwap(ctx, "k", []byte("{ \"a\" :\n 1 }"), 0); err != nil {
		t.Fatal(err)
	}
	if v, _ := mustGet(t, s, "k"); v != `{"a":1}` {
		t.Fatalf("stored %q, want it compacted", v)
	}
}

// timed is a value with the two times FileOptions.Times reads.
func timed(updated, expires time.Time) []byte {
	b, _ := json.Marshal(map[string]time.Time{"u": updated, "x": expires})
	return b
}

func timesOf(b []byte) (updated, expires time.Time) {
	var v map[string]time.Time
	json.Unmarshal(b, &v)
	return v["u"], v["x"]
}

func TestFilePrunes(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	o := testFile
	o.Times, o.MaxEntries = timesOf, 3
	s := openFile(t, t.TempDir(), o)
	put := func(key string, updated, expires time.Time) {
		t.Helper()
		_, rev, _ := s.Get(ctx, key)
		if err := s.CompareAndSwap(ctx, key, timed(updated, expires), rev); err != nil {
			t.Fatal(err)
		}
	}
	keys := func() string {
		items, _ := s.List(ctx, "")
		var ks []string
		for _, it := range items {
			ks = append(ks, it.Key)
		}
		return strings.Join(ks, " ")
	}
	put("a", t0, t0.Add(time.Hour))
	put("b", t0, t0.Add(3*time.Hour))
	put("c", t0.Add(time.Minute), t0.Add(time.Hour))
	// A write at t0+2h: a and c expired before it, b did not.
	put("d", t0.Add(2*time.Hour), t0.Add(5*time.Hour))
	if got := keys(); got != "b d" {
		t.Fatalf("after pruning expired values: %s, want b d", got)
	}
	// Beyond MaxEntries the oldest updates go.
	put("e", t0.Add(2*time.Hour+time.Minute), t0.Add(5*time.Hour))
	put("f", t0.Add(2*time.Hour+2*time.Minute), t0.Add(5*time.Hour))
	if got := keys(); got != "d e f" {
		t.Fatalf("after pruning beyond 3 entries: %s, want d e f", got)
	}
}

// The document is written exactly as encoding/json writes its typed form
// (what the stores wrote before they shared this layer), entries by key.
func TestFileDocumentIsTheTypedEncoding(t *testing.T) {
	s := openFile(t, t.TempDir(), testFile)
	type entry struct {
		Rev   uint64 `json:"rev"`
		Value any    `json:"value"`
	}
	type doc struct {
		Format  string           `json:"format"`
		Seq     uint64           `json:"seq"`
		Entries map[string]entry `json:"entries"`
	}
	values := map[string]any{"ns.b": map[string]any{"s": "<&> é"}, "ns.a": []int{1, 2}, "gone": 0, "x": "y"}
	want := doc{Format: testFile.Format, Entries: map[string]entry{}}
	for _, k := range []string{"ns.b", "ns.a", "gone", "x"} {
		v, _ := json.Marshal(values[k])
		if err := s.CompareAndSwap(ctx, k, v, 0); err != nil {
			t.Fatal(err)
		}
		want.Seq++
		want.Entries[k] = entry{Rev: want.Seq, Value: values[k]}
	}
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	delete(want.Entries, "gone")
	wantB, _ := json.Marshal(want)
	if got, _ := os.ReadFile(s.Path()); string(got) != string(wantB) {
		t.Fatalf("document:\n%s\nwant:\n%s", got, wantB)
	}
}
