package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the length budget of a function of the product code,
// from its func keyword to its closing brace: one that is longer does
// several things, and is split into named steps (transport.Run: start,
// serve, stop).
const maxFuncLines = 80

// longFuncs are the functions over the budget today, each with its
// length when listed, which it may not exceed. The list only shrinks: a
// function split below the budget leaves it (the test says so), and a new
// long function is split rather than added.
var longFuncs = map[string]int{
	"assemble.go assemble":                    102, // the one assembly of a session's parts
	"internal/jsonscan/scan.go skipComposite": 94,
}

// devTools are the folders of development tools beside the product
// (ARCHITECTURE.md, "Packages"), which the budget does not cover.
var devTools = []string{"fleet/", "bench/", "interop/", "scripts/"}

// TestFunctionLength: no function of the product code (tests and the
// development tools aside) is longer than maxFuncLines, but the listed few.
func TestFunctionLength(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	seen := map[string]bool{}
	walkTree(t, root, func(rel string) {
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || strings.Contains("/"+rel, "/testdata/") {
			return
		}
		for _, d := range devTools {
			if strings.HasPrefix(rel, d) {
				return
			}
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			key := rel + " " + fd.Name.Name
			if n <= maxFuncLines {
				continue
			}
			seen[key] = true
			switch was, listed := longFuncs[key]; {
			case !listed:
				t.Errorf("%s: %s is %d lines, over the budget of %d: split it into named steps", rel, fd.Name.Name, n, maxFuncLines)
			case n > was:
				t.Errorf("%s: %s grew to %d lines (listed at %d): split it rather than let it grow", rel, fd.Name.Name, n, was)
			}
		}
	})
	for key := range longFuncs {
		if !seen[key] {
			t.Errorf("%s is within the budget now (or gone): remove it from longFuncs", key)
		}
	}
}
