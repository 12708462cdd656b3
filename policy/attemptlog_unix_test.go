//go:build unix

package policy

import (
	"path/filepath"
	"syscall"
	"testing"
)

// Directories are created 0700 exactly, whatever the umask.
func TestOpenLogIgnoresUmask(t *testing.T) {
	old := syscall.Umask(0o277)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "a", "b")
	l, err := OpenLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	for _, p := range []string{filepath.Dir(dir), dir} {
		if got := mode(t, p); got != 0o700 {
			t.Errorf("mode of %s: got %v, want 0700", p, got)
		}
	}
	if got := mode(t, filepath.Join(dir, LogFileName)); got != 0o600 {
		t.Errorf("log mode: got %v, want 0600", got)
	}
}
