package circuit

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/natstest"
)

// TestOpenStore: every spec opens the circuits' schema on its backend
// (the backends themselves are kvstore's tests).
func TestOpenStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "acp-guard")
	for i, spec := range []string{"", "file", " memory ", natstest.Start(t).URL()} {
		st, err := OpenStore(spec, Options{Dir: filepath.Join(dir, strconv.Itoa(i))})
		if st == nil || err != nil {
			t.Fatalf("OpenStore(%q) = %v, %v", spec, st, err)
		}
		if err := st.CompareAndSwap(ctx, "ns.default.0", Record{Key: Key{Provider: "p", Scope: "provider"}}, 0); err != nil {
			t.Fatalf("OpenStore(%q): %v", spec, err)
		}
		st.Close()
	}
	if st, err := OpenStore("off", Options{Dir: dir}); st != nil || err != nil {
		t.Fatalf("OpenStore(off) = %v, %v", st, err)
	}
	_, err := OpenStore("redis://user:hunter2@host", Options{Dir: dir})
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "host") {
		t.Fatalf("OpenStore(redis) = %v, want an error without the password", err)
	}
}
