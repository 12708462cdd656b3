package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every ACP_GUARD_* variable the module's code reads is known to the
// unknown-variable warning: a new one must be a flag's or be added to
// otherEnv, or every user who sets it would be warned it is ignored.
func TestEveryEnvVariableIsKnown(t *testing.T) {
	root := newRootCmd(&streams{})
	var run *cobra.Command
	for _, c := range root.Commands() {
		if c.Name() == "run" {
			run = c
		}
	}
	re := regexp.MustCompile(`ACP_GUARD_[A-Z][A-Z0-9_]*[A-Z0-9]`)
	seen := map[string]string{}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, name := range re.FindAllString(string(b), -1) {
			seen[name] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 5 {
		t.Fatalf("found only %d ACP_GUARD_* names in the module: %v", len(seen), seen)
	}
	for name, path := range seen {
		if strings.HasSuffix(name, "_") {
			continue // a prefix in prose ("ACP_GUARD_<FLAG>")
		}
		if u := unknownEnv(run.Flags(), []string{name + "=x"}); len(u) != 0 {
			t.Errorf("%s (read in %s) would be warned about as unknown: add it to otherEnv or make it a flag's", name, path)
		}
	}
	// And a misspelling is still caught.
	if u := unknownEnv(run.Flags(), []string{"ACP_GUARD_STATEDIR=x"}); len(u) != 1 || u[0][1] != "ACP_GUARD_STATE_DIR" {
		t.Errorf("ACP_GUARD_STATEDIR: %v, want a warning suggesting ACP_GUARD_STATE_DIR", u)
	}
}
