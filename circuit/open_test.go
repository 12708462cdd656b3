package circuit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/natstest"
)

func TestOpenStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "acp-guard")
	for _, spec := range []string{"", "file"} {
		st, err := OpenStore(spec, dir, NATSOptions{})
		if _, ok := st.(*FileStore); !ok || err != nil {
			t.Fatalf("OpenStore(%q) = %T, %v; want a FileStore", spec, st, err)
		}
		st.Close()
	}
	if st, err := OpenStore("off", dir, NATSOptions{}); st != nil || err != nil {
		t.Fatalf("OpenStore(off) = %v, %v", st, err)
	}
	if st, err := OpenStore(" memory ", dir, NATSOptions{}); err != nil || st == nil {
		t.Fatalf("OpenStore(memory) = %v, %v", st, err)
	}
	ns := natstest.Start(t)
	st, err := OpenStore(ns.URL(), dir, NATSOptions{})
	if _, ok := st.(*NATSStore); !ok || err != nil {
		t.Fatalf("OpenStore(nats) = %T, %v", st, err)
	}
	st.Close()
	_, err = OpenStore("redis://user:hunter2@host", dir, NATSOptions{})
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "host") {
		t.Fatalf("OpenStore(redis) = %v, want an error without the password", err)
	}
}
