package replay

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenRecorderModes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	rec, err := OpenRecorder(path, RecorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec.Frame(1, DirC2A, []byte(`{"id":1}`), "", false)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("got mode %v, want 0600", fi.Mode().Perm())
	}

	// An existing file is refused, and left as it is.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRecorder(path, RecorderOptions{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("existing file: got %v, want it refused", err)
	}
	if fi, _ := os.Stat(path); fi.Size() == 0 || fi.Mode().Perm() != 0o644 {
		t.Errorf("refused file was changed: size %d, mode %v", fi.Size(), fi.Mode().Perm())
	}

	// Overwrite truncates it and narrows it to 0600.
	rec, err = OpenRecorder(path, RecorderOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	rec.Close()
	fi, _ := os.Stat(path)
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("overwritten file: got mode %v, want 0600", got)
	}
	if fi.Size() != 0 {
		t.Errorf("overwritten file: got size %d, want it truncated to 0", fi.Size())
	}
}

func TestOpenRecorderLeavesExistingDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rec, err := OpenRecorder(filepath.Join(dir, "s.jsonl"), RecorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec.Close()
	fi, _ := os.Stat(dir)
	if got := fi.Mode().Perm(); got != 0o755 {
		t.Errorf("got mode %v, want the user's 0755 kept", got)
	}
}

func TestOpenRecorderErrors(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "target")
	os.WriteFile(target, []byte("precious"), 0o644)
	link := filepath.Join(base, "link.jsonl")
	os.Symlink(target, link)
	for _, tt := range []struct {
		path string
		opts RecorderOptions
		want string
	}{
		{filepath.Join(base, "new", "s.jsonl"), RecorderOptions{}, "does not exist"},
		{link, RecorderOptions{}, "symbolic link"},
		{link, RecorderOptions{Overwrite: true}, "symbolic link"},
	} {
		_, err := OpenRecorder(tt.path, tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) {
			t.Errorf("OpenRecorder(%s, %+v): got %v, want an error naming the path with %q", tt.path, tt.opts, err, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "new")); err == nil {
		t.Error("a directory was created")
	}
	if data, _ := os.ReadFile(target); string(data) != "precious" {
		t.Errorf("symlink target changed: %q", data)
	}
}

// redactKeys hides "sk-" API keys, like the classifier's sanitizer does.
func redactKeys(s string) string {
	for {
		i := strings.Index(s, "sk-")
		if i < 0 {
			return s
		}
		j := i + 3
		for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		s = s[:i] + "[key]" + s[j:]
	}
}

func TestRecorderRedaction(t *testing.T) {
	record := func(opts RecorderOptions) string {
		var buf bytes.Buffer
		rec := NewRecorder(&buf, opts)
		rec.Meta(MetaInfo{Argv: []string{"agent", "--key=sk-abc1"}, Adapter: "demo", Version: "v", Catalogue: "c"})
		rec.Frame(1, DirC2A, []byte(`{"id":1,"params":{"prompt":[{"text":"use sk-secret9 please"}]}}`), "", false)
		rec.Frame(2, DirA2C, []byte(`{"id":1,"error":{"code":-32603,"message":"bad key sk-zz"}}`), "", false)
		rec.Frame(3, DirA2C, []byte(`{"id":2,"result":{"text":"no secrets here"}}`), "", false)
		rec.Frame(4, DirA2C, []byte(`not json sk-raw1`), "", false)
		rec.Frame(5, DirA2C, []byte(`{"x":"sk-q"}`), "", false) // redaction breaks the JSON: stored raw
		rec.Stderr(6, []byte("401 for sk-err7\n"))
		rec.Close()
		return buf.String()
	}
	breaking := func(s string) string {
		if strings.Contains(s, `"sk-q"`) {
			return strings.Replace(s, `"sk-q"`, `[key]`, 1)
		}
		return redactKeys(s)
	}
	redacted := record(RecorderOptions{Redact: breaking})
	want := strings.Join([]string{
		`{"t_ms":0,"dir":"meta","argv":["agent","--key=[key]"],"adapter":"demo","version":"v","catalogue":"c"}`,
		`{"t_ms":1,"dir":"c2a","msg":{"id":1,"params":{"prompt":[{"text":"use [key] please"}]}}}`,
		`{"t_ms":2,"dir":"a2c","msg":{"id":1,"error":{"code":-32603,"message":"bad key [key]"}}}`,
		`{"t_ms":3,"dir":"a2c","msg":{"id":2,"result":{"text":"no secrets here"}}}`,
		`{"t_ms":4,"dir":"a2c","raw":"not json [key]"}`,
		`{"t_ms":5,"dir":"a2c","raw":"{\"x\":[key]}"}`,
		`{"t_ms":6,"dir":"stderr","msg":"401 for [key]"}`,
	}, "\n") + "\n"
	if redacted != want {
		t.Errorf("redacted transcript:\ngot\n%s\nwant\n%s", redacted, want)
	}
	for _, opts := range []RecorderOptions{{}, {Redact: breaking, RecordRaw: true}} {
		raw := record(opts)
		for _, secret := range []string{"sk-abc1", "sk-secret9", "sk-zz", "sk-raw1", `{"x":"sk-q"}`, "sk-err7"} {
			if !strings.Contains(raw, secret) {
				t.Errorf("RecordRaw=%v Redact set=%v: %q missing from\n%s", opts.RecordRaw, opts.Redact != nil, secret, raw)
			}
		}
	}
}

// failWriter fails every write.
type failWriter struct{ calls int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.calls++
	return 0, errors.New("no space left on device")
}

func TestRecorderWriteFailureLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	w := &failWriter{}
	rec := NewRecorder(w, RecorderOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	big := []byte(`{"pad":"` + strings.Repeat("x", 100<<10) + `"}`) // bigger than the buffer
	for i := range 5 {
		rec.Frame(int64(i), DirA2C, big, "", false)
		rec.Stderr(int64(i), []byte("x"))
	}
	rec.Exit(9, 0, "")
	rec.Flush()
	if err := rec.Close(); err != nil {
		t.Errorf("Close() = %v, want nil (the failure was logged)", err)
	}
	if got := strings.Count(logs.String(), "transcript write failed"); got != 1 {
		t.Errorf("got %d warnings, want exactly 1:\n%s", got, logs.String())
	}
	if w.calls != 1 {
		t.Errorf("got %d writes, want 1 (inert after the failure)", w.calls)
	}
	if rec.Err() == nil {
		t.Error("Err() = nil, want the write failure")
	}
}

func TestRecorderDevFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	var logs bytes.Buffer
	rec, err := OpenRecorder("/dev/full", RecorderOptions{Overwrite: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Skipf("cannot open /dev/full: %v", err)
	}
	rec.Frame(1, DirC2A, []byte(`{}`), "", false)
	rec.Exit(2, 0, "") // flushes: the write fails here
	rec.Frame(3, DirC2A, []byte(`{}`), "", false)
	rec.Close()
	if got := strings.Count(logs.String(), "transcript write failed"); got != 1 {
		t.Errorf("got %d warnings, want 1:\n%s", got, logs.String())
	}
}

func TestRecorderDropsBadDirection(t *testing.T) {
	var buf, logs bytes.Buffer
	rec := NewRecorder(&buf, RecorderOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	rec.Frame(1, DirStderr, []byte(`{}`), "", false)
	rec.Close()
	if buf.Len() != 0 || !strings.Contains(logs.String(), "bad direction") {
		t.Errorf("got transcript %q and logs %q, want nothing written and an error logged", buf.String(), logs.String())
	}
}

// TestRecorderReaderRoundTrip checks that every kind of line the proxy can
// see comes back from the Reader byte for byte.
func TestRecorderReaderRoundTrip(t *testing.T) {
	type frame struct {
		dir, line, via string
		suppressed     bool
		wantBytes      string
		wantCRLF       bool
		wantJSON       bool
	}
	huge := `{"jsonrpc":"2.0","method":"session/update","params":{"text":"` + strings.Repeat("é", 600<<10) + `"}}`
	frames := []frame{
		{dir: DirC2A, line: `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, wantBytes: `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, wantJSON: true},
		{dir: DirA2C, line: "{\"id\" : 1 ,\t\"result\":{}}\n", wantBytes: "{\"id\" : 1 ,\t\"result\":{}}", wantJSON: true},
		{dir: DirA2C, line: "{\"a\":\"\\u00e9\\n\"}\r\n", wantBytes: `{"a":"\u00e9\n"}`, wantCRLF: true, wantJSON: true},
		{dir: DirA2C, line: "{\"bad utf8\":\"\xff\xfe\"}", wantBytes: "{\"bad utf8\":\"\xff\xfe\"}", wantJSON: true},
		{dir: DirA2C, line: "{\"cr\":\r1}", wantBytes: "{\"cr\":\r1}", wantJSON: true},
		{dir: DirA2C, line: "  {\"padded\":true} ", wantBytes: "  {\"padded\":true} ", wantJSON: true},
		{dir: DirA2C, line: "Error: not json \"quoted\"", wantBytes: "Error: not json \"quoted\""},
		{dir: DirA2C, line: "", wantBytes: ""},
		{dir: DirA2C, line: `{"id":7,"error":{}}`, via: ViaGuard, wantBytes: `{"id":7,"error":{}}`, wantJSON: true},
		{dir: DirA2C, line: `{"method":"session/update"}`, suppressed: true, wantBytes: `{"method":"session/update"}`, wantJSON: true},
		{dir: DirA2C, line: huge, wantBytes: huge, wantJSON: true},
	}
	var buf bytes.Buffer
	rec := NewRecorder(&buf, RecorderOptions{})
	rec.Meta(MetaInfo{Argv: []string{"a b", "c"}, Adapter: "demo", Version: "1", Catalogue: "2",
		Policy: []byte("{\n  \"version\": 1\n}"), Fallback: []string{"model-b"}})
	for i, f := range frames {
		rec.Frame(int64(i), f.dir, []byte(f.line), f.via, f.suppressed)
	}
	rec.Stderr(100, []byte("warn: \x1b[1mbold\x1b[0m\r\n"))
	rec.Exit(101, -1, "SIGTERM")
	rec.Close()

	events, errs := ReadAll(bytes.NewReader(buf.Bytes()))
	if len(errs) != 0 {
		t.Fatalf("read errors: %v", errs)
	}
	if len(events) != len(frames)+3 {
		t.Fatalf("got %d events, want %d", len(events), len(frames)+3)
	}
	meta := events[0]
	if meta.Dir != DirMeta || strings.Join(meta.Argv, "|") != "a b|c" || meta.Adapter != "demo" || meta.Version != "1" || meta.Catalogue != "2" ||
		string(meta.Policy) != `{"version":1}` || strings.Join(meta.Fallback, "|") != "model-b" {
		t.Errorf("got meta %+v", meta)
	}
	for i, f := range frames {
		ev := events[i+1]
		if ev.Dir != f.dir || ev.TMs != int64(i) || ev.Via != f.via || ev.Suppressed != f.suppressed || ev.CRLF != f.wantCRLF || ev.IsJSON() != f.wantJSON {
			t.Errorf("frame %d: got %+v", i, ev)
		}
		if got := string(ev.Bytes()); got != f.wantBytes {
			t.Errorf("frame %d: got bytes %.80q, want %.80q", i, got, f.wantBytes)
		}
	}
	if got := events[len(frames)+1].Text(); got != "warn: \x1b[1mbold\x1b[0m" {
		t.Errorf("got stderr %q", got)
	}
	exit := events[len(frames)+2]
	if exit.Dir != DirExit || exit.Code == nil || *exit.Code != -1 || exit.Signal != "SIGTERM" {
		t.Errorf("got exit %+v", exit)
	}
}
