package policy

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleRecord(session string, attempt int) Record {
	d, _ := Evaluate(exampleDoc(), Failure{Class: "transient", Safe: true, Now: t0}, Route{})
	return Record{
		Time:             t0.Add(time.Duration(attempt) * time.Second),
		SessionID:        session,
		RequestID:        `"req-7"`,
		Generation:       3,
		Attempt:          attempt,
		Code:             "provider_overloaded",
		Class:            "transient",
		Rule:             "anthropic.overloaded_error.v1",
		CatalogueVersion: "2026.09.1",
		Decision:         d,
		Policy:           exampleDoc(),
		Outcome:          AttemptScheduled,
	}
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestOpenLogModes(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "state", "acp-guard")
	l, err := OpenLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tt := range []struct {
		path string
		want fs.FileMode
	}{
		{filepath.Join(base, "state"), 0o700},
		{dir, 0o700},
		{filepath.Join(dir, LogFileName), 0o600},
		{base, 0o755}, // existing: left alone
	} {
		if got := mode(t, tt.path); got != tt.want {
			t.Errorf("mode of %s: got %v, want %v", tt.path, got, tt.want)
		}
	}
	if got, want := l.Path(), filepath.Join(dir, LogFileName); got != want {
		t.Errorf("Path: got %q, want %q", got, want)
	}
}

func TestOpenLogNarrowsExistingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LogFileName)
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if got := mode(t, path); got != 0o600 {
		t.Errorf("mode: got %v, want 0600", got)
	}
}

func TestOpenLogErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d", LogFileName), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, dir string }{
		{"empty", ""},
		{"a file in the way", filepath.Join(file, "sub")},
		{"log path is a directory", filepath.Join(dir, "d")},
	} {
		if l, err := OpenLog(tt.dir); err == nil {
			l.Close()
			t.Errorf("OpenLog(%s): got nil error, want an error", tt.name)
		}
	}
}

// Records are appended, never rewritten, across opens.
func TestAppendOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LogFileName)
	var want []Record
	var prefix []byte
	for i := range 3 {
		l, err := OpenLog(dir)
		if err != nil {
			t.Fatal(err)
		}
		rec := sampleRecord("s1", i)
		if err := l.Append(rec); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		want = append(want, rec)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, prefix) {
			t.Fatalf("open %d rewrote earlier records:\nbefore %s\nafter  %s", i, prefix, data)
		}
		if n := bytes.Count(data, []byte("\n")); n != i+1 {
			t.Errorf("after %d appends: got %d lines, want %d", i+1, n, i+1)
		}
		prefix = data
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, skipped, err := ReadLog(f, "")
	if err != nil || skipped != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadLog:\ngot  %+v\nwant %+v", got, want)
	}
}

// The file is opened O_APPEND: a write lands at the end even when someone
// else appended in between.
func TestAppendAfterForeignWrite(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append(sampleRecord("a", 0)); err != nil {
		t.Fatal(err)
	}
	other, err := OpenLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Append(sampleRecord("b", 0)); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if err := l.Append(sampleRecord("a", 1)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := ReadLog(bytes.NewReader(data), "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.SessionID)
	}
	if want := []string{"a", "b", "a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sessions in order: got %q, want %q", got, want)
	}
}

func TestAppendNormalizes(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	paris := time.FixedZone("CEST", 2*3600)
	rec := Record{
		Time:      time.Date(2026, 9, 15, 14, 0, 0, 123456789, paris),
		SessionID: "s",
		RequestID: "7",
		Decision: Decision{Action: ActionWait, Delay: 1500 * time.Microsecond,
			Deadline: time.Date(2026, 9, 15, 14, 1, 0, 0, paris), Class: "hard", Reason: ReasonResetWait},
		Policy:  Default(),
		Outcome: AttemptScheduled,
	}
	if err := l.Append(rec); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	line := string(data)
	for _, want := range []string{
		`"time":"2026-09-15T12:00:00.123456789Z"`,
		`"requestId":"7"`,
		`"delayMs":2`,
		`"deadline":"2026-09-15T12:01:00Z"`,
		`"outcome":"scheduled"`,
		`"policy":{"version":1,`,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("record %s: want it to contain %s", line, want)
		}
	}
	// A decision without a deadline omits it.
	rec.Decision = Decision{Action: ActionStop, Reason: ReasonUnsafe}
	if err := l.Append(rec); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(l.Path())
	last := strings.SplitAfter(strings.TrimSpace(string(data)), "\n")[1]
	if strings.Contains(last, "deadline") {
		t.Errorf("record %s: want no deadline", last)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(rec); err == nil {
		t.Errorf("Append after Close: got nil error, want an error")
	}
}

func TestReadLog(t *testing.T) {
	var buf bytes.Buffer
	dir := t.TempDir()
	l, err := OpenLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range []string{"s1", "s2", "s1"} {
		if err := l.Append(sampleRecord(s, i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	data, _ := os.ReadFile(l.Path())
	buf.Write(data)
	full := buf.String()

	torn := `{"time":"2026-09-15T12:00:00Z","sessio`
	for _, tt := range []struct {
		name     string
		in       string
		session  string
		attempts []int
		skipped  []int // line numbers
	}{
		{"all", full, "", []int{0, 1, 2}, nil},
		{"one session", full, "s1", []int{0, 2}, nil},
		{"unknown session", full, "nope", nil, nil},
		{"torn last line", full + torn, "", []int{0, 1, 2}, []int{4}},
		{"last line complete without newline", strings.TrimSuffix(full, "\n"), "", []int{0, 1, 2}, nil},
		{"blank lines", "\n" + full + "\n\n", "", []int{0, 1, 2}, nil},
		{"corrupt middle line", strings.Replace(full, "\n", "\n{oops\n", 1), "", []int{0, 1, 2}, []int{2}},
		// What a writer without the fresh-line rule left behind: the
		// next record glued to a torn one.
		{"torn record glued to the next", strings.Replace(full, "\n", "\n"+torn, 1), "", []int{0, 2}, []int{2}},
		{"overlong line", strings.Replace(full, "\n", "\n"+strings.Repeat("x", MaxRecordBytes+10)+"\n", 1), "", []int{0, 1, 2}, []int{2}},
		{"empty", "", "", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recs, skipped, err := ReadLog(strings.NewReader(tt.in), tt.session)
			if err != nil {
				t.Fatalf("ReadLog: got error %v, want nil", err)
			}
			var got, gotSkipped []int
			for _, r := range recs {
				got = append(got, r.Attempt)
			}
			for _, s := range skipped {
				gotSkipped = append(gotSkipped, s.Line)
			}
			if !reflect.DeepEqual(got, tt.attempts) {
				t.Errorf("attempts: got %v, want %v", got, tt.attempts)
			}
			if !reflect.DeepEqual(gotSkipped, tt.skipped) {
				t.Errorf("skipped lines: got %v (%v), want %v", gotSkipped, skipped, tt.skipped)
			}
		})
	}
}

// A record torn by a crash is ended before the next one is written, so
// only the torn record is lost.
func TestOpenLogStartsOnFreshLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LogFileName)
	first, _ := json.Marshal(sampleRecord("s1", 0))
	if err := os.WriteFile(path, append(append(first, '\n'), `{"time":"2026-09-15T12:00:00Z","sessio`...), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(sampleRecord("s2", 1)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	data, _ := os.ReadFile(path)
	recs, skipped, err := ReadLog(bytes.NewReader(data), "")
	if err != nil || len(recs) != 2 || len(skipped) != 1 || skipped[0].Line != 2 {
		t.Fatalf("got %d records, skipped %v, err %v; want 2 records and line 2 skipped:\n%s", len(recs), skipped, err, data)
	}
	if recs[1].SessionID != "s2" {
		t.Errorf("second record: got session %q, want s2", recs[1].SessionID)
	}
}

// A symlink in place of the log, or as the state directory, is refused and
// its target left untouched.
func TestOpenLogRefusesSymlinks(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "target")
	if err := os.WriteFile(target, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "state")
	os.Mkdir(dir, 0o700)
	os.Symlink(target, filepath.Join(dir, LogFileName))
	if l, err := OpenLog(dir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		if l != nil {
			l.Close()
		}
		t.Errorf("symlinked log: got %v, want a symbolic link error", err)
	}
	linkDir := filepath.Join(base, "linkdir")
	os.Symlink(t.TempDir(), linkDir)
	if l, err := OpenLog(linkDir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		if l != nil {
			l.Close()
		}
		t.Errorf("symlinked state dir: got %v, want a symbolic link error", err)
	}
	if data, _ := os.ReadFile(target); string(data) != "precious" {
		t.Errorf("target changed: %q", data)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o644 {
		t.Errorf("target mode changed: %v", fi.Mode().Perm())
	}
}

func TestDefaultStateDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, tt := range []struct{ xdg, want string }{
		{"/var/state", "/var/state/acp-guard"},
		{"", filepath.Join(home, ".local", "state", "acp-guard")},
		{"relative/state", filepath.Join(home, ".local", "state", "acp-guard")},
	} {
		t.Setenv("XDG_STATE_HOME", tt.xdg)
		got, err := DefaultStateDir()
		if err != nil || got != tt.want {
			t.Errorf("DefaultStateDir with XDG_STATE_HOME=%q: got %q, %v; want %q", tt.xdg, got, err, tt.want)
		}
	}
}
