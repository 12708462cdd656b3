//go:build unix

package safefile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The umask is POSIX's: MkdirPrivate sets 0700 whatever it is.
func TestMkdirPrivate(t *testing.T) {
	old := syscall.Umask(0o277)
	defer syscall.Umask(old)
	base := t.TempDir()
	os.Chmod(base, 0o755)
	dir := filepath.Join(base, "a", "b")
	if err := MkdirPrivate(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(dir), dir} {
		if got := perm(t, p); got != DirMode {
			t.Errorf("%s: mode %v, want 0700", p, got)
		}
	}
	if got := perm(t, base); got != 0o755 {
		t.Errorf("existing %s: mode changed to %v", base, got)
	}
}
