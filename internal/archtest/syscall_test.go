package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSyscallOnlyInPlatform: every OS difference lives in
// internal/platform, so nothing else imports syscall or golang.org/x/sys.
// The one exception is a test file that is itself built for some OSes
// only (a //go:build line, or a _linux, _darwin or _windows name): such a test
// is about that OS (a umask, a FIFO, a signal delivered by the kernel) and
// may ask it directly. So may the tools in linuxTools, built for Linux
// only because what they do is Linux's (network namespaces). Modules of their own (telemetry/collectortest,
// dev/bench/jsonrpc2cmp) are not walked.
func TestSyscallOnlyInPlatform(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	walkTree(t, root, func(rel string) {
		if !strings.HasSuffix(rel, ".go") || strings.Contains("/"+rel, "/testdata/") || path.Dir(rel) == "internal/platform" {
			return
		}
		f, err := parser.ParseFile(fset, root+"/"+rel, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p != "syscall" && p != "golang.org/x/sys" && !strings.HasPrefix(p, "golang.org/x/sys/") {
				continue
			}
			if (strings.HasSuffix(rel, "_test.go") || slices.Contains(linuxTools, path.Dir(rel))) && osSpecific(rel, f.Comments) {
				continue
			}
			t.Errorf("%s imports %s: OS differences belong in internal/platform", rel, p)
		}
	})
}

// linuxTools are packages built for Linux only, every file tagged.
var linuxTools = []string{"dev/fleet/cmd/fleet-cluster"}

// osSpecific reports whether a file is built for some OSes only.
func osSpecific(rel string, comments []*ast.CommentGroup) bool {
	base := strings.TrimSuffix(path.Base(rel), "_test.go")
	for _, goos := range []string{"_linux", "_darwin", "_windows"} {
		if strings.HasSuffix(base, goos) {
			return true
		}
	}
	for _, cg := range comments {
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build ") {
				return true
			}
		}
	}
	return false
}
