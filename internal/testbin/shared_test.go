package testbin

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// module writes a one-package module with an embedded file into a new
// directory and returns it.
func module(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":                "module example.com/prog\n\ngo 1.22\n",
		"cmd/prog/main.go":      "package main\n\nimport _ \"embed\"\n\n//go:embed msg.txt\nvar msg string\n\nfunc main() { println(msg) }\n",
		"cmd/prog/msg.txt":      "hello\n",
		"cmd/prog/main_test.go": "package main\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "go.sum"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// The key follows the sources, the embedded files and the build settings,
// and not the test files.
func TestBuildKeyFollowsContent(t *testing.T) {
	root := module(t)
	key := func() string {
		t.Helper()
		k, err := buildKey(root, "./cmd/prog", false)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k0 := key()
	if k := key(); k != k0 {
		t.Fatalf("key changed without a change: %s, %s", k0, k)
	}
	if k, _ := buildKey(root, "./cmd/prog", true); k == k0 {
		t.Errorf("-race build has the same key")
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cmd/prog/main_test.go", "package main\n\n// changed\n")
	if k := key(); k != k0 {
		t.Errorf("a test file changed the key")
	}
	write("cmd/prog/msg.txt", "bye\n")
	k1 := key()
	if k1 == k0 {
		t.Errorf("an embedded file's change kept the key")
	}
	write("cmd/prog/main.go", "package main\n\nimport _ \"embed\"\n\n//go:embed msg.txt\nvar msg string\n\nfunc main() { print(msg) }\n")
	if k := key(); k == k1 {
		t.Errorf("a source change kept the key")
	}
}

// Test processes that ask at once wait for one build and share it; a
// changed source gets a new build.
func TestBuildSharedOnce(t *testing.T) {
	root, dir := module(t), t.TempDir()
	const n = 4
	paths := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := buildShared(root, dir, "./cmd/prog", false)
			if err != nil {
				t.Error(err)
			}
			paths[i] = p
		}()
	}
	wg.Wait()
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Fatalf("builds differ: %q", paths)
		}
	}
	ents, _ := filepath.Glob(filepath.Join(dir, "*", "prog"))
	if len(ents) != 1 {
		t.Errorf("built programs: %q, want one", ents)
	}
	st0, err := os.Stat(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	again, err := buildShared(root, dir, "./cmd/prog", false)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(again); err != nil || !os.SameFile(st, st0) {
		t.Errorf("a second call rebuilt the program (%v)", err)
	}
	if err := os.WriteFile(filepath.Join(root, "cmd/prog/msg.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := buildShared(root, dir, "./cmd/prog", false)
	if err != nil {
		t.Fatal(err)
	}
	if changed == paths[0] {
		t.Errorf("changed sources reused the old build %s", changed)
	}
}
