package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func perm(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func write(t *testing.T, p, s string, m fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), m); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

// A symlink in the final component is refused in every mode, and its
// target is neither truncated, appended to nor chmodded.
func TestOpenRefusesSymlink(t *testing.T) {
	for _, how := range []How{New, Append, Truncate} {
		dir := t.TempDir()
		target := filepath.Join(dir, "target")
		write(t, target, "precious\n", 0o644)
		link := filepath.Join(dir, "link")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		f, err := Open(link, how)
		if err == nil {
			f.Close()
			t.Fatalf("mode %d: Open(symlink) succeeded", how)
		}
		var se *SymlinkError
		if !errors.As(err, &se) || se.Path != link || !strings.Contains(err.Error(), link) {
			t.Errorf("mode %d: got %v, want a SymlinkError naming %s", how, err, link)
		}
		if data, _ := os.ReadFile(target); string(data) != "precious\n" {
			t.Errorf("mode %d: target changed to %q", how, data)
		}
		if got := perm(t, target); got != 0o644 {
			t.Errorf("mode %d: target mode changed to %v", how, got)
		}
	}
	// A dangling symlink is refused too (O_CREAT would create its target).
	dir := t.TempDir()
	link := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), link); err != nil {
		t.Fatal(err)
	}
	for _, how := range []How{New, Append, Truncate} {
		if f, err := Open(link, how); err == nil {
			f.Close()
			t.Errorf("mode %d: Open(dangling symlink) succeeded", how)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("the dangling link's target was created")
	}
}

func TestOpenModes(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	f, err := Open(p, New)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("one\n")
	f.Close()
	if got := perm(t, p); got != FileMode {
		t.Errorf("new file: mode %v, want 0600", got)
	}
	var ee *ExistsError
	if _, err := Open(p, New); !errors.As(err, &ee) {
		t.Errorf("New on an existing file: got %v, want ExistsError", err)
	}
	os.Chmod(p, 0o666)
	f, err = Open(p, Append)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("two\n")
	f.Close()
	if data, _ := os.ReadFile(p); string(data) != "one\ntwo\n" {
		t.Errorf("append: got %q", data)
	}
	if got := perm(t, p); got != FileMode {
		t.Errorf("appended file: mode %v, want narrowed to 0600", got)
	}
	f, err = Open(p, Truncate)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if data, _ := os.ReadFile(p); len(data) != 0 {
		t.Errorf("truncate: got %q", data)
	}
}

func TestOpenErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ path, want string }{
		{filepath.Join(dir, "missing", "f"), "missing does not exist"},
		{dir, "is a directory"},
	} {
		if _, err := Open(tt.path, Append); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%s): got %v, want %q", tt.path, err, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Error("Open created a directory")
	}
}

// A device is written as it is and never chmodded.
func TestOpenDevice(t *testing.T) {
	before := perm(t, "/dev/null")
	f, err := Open("/dev/null", Append)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := perm(t, "/dev/null"); got != before {
		t.Errorf("/dev/null mode changed from %v to %v", before, got)
	}
}

func TestEndsInNewline(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		content string
		want    bool
	}{{"", true}, {"{}\n", true}, {"{}\n{\"torn", false}} {
		p := filepath.Join(dir, "f")
		os.Remove(p)
		write(t, p, tt.content, 0o600)
		f, err := Open(p, Append)
		if err != nil {
			t.Fatal(err)
		}
		got, err := EndsInNewline(f)
		f.Close()
		if err != nil || got != tt.want {
			t.Errorf("%q: got %v, %v; want %v", tt.content, got, err, tt.want)
		}
	}
}

// The directory acp-guard creates files into must not be a symlink; a
// symlink higher up is the operator's layout and allowed.
func TestMkdirPrivateSymlinks(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	os.Mkdir(real, 0o700)
	leaf := filepath.Join(base, "leaf")
	os.Symlink(real, leaf)
	var se *SymlinkError
	if err := MkdirPrivate(leaf); !errors.As(err, &se) || se.Path != leaf {
		t.Errorf("symlinked leaf: got %v, want SymlinkError naming %s", err, leaf)
	}
	if err := MkdirPrivate(filepath.Join(leaf, "sub")); err != nil {
		t.Errorf("symlink above the leaf: got %v, want it allowed", err)
	}
	file := filepath.Join(base, "file")
	write(t, file, "", 0o600)
	if err := MkdirPrivate(filepath.Join(file, "sub")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file in the way: got %v", err)
	}
}
