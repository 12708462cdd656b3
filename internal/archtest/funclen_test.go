package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the length budget of a function of the product code,
// from its func keyword to its closing brace: one that is longer does
// several things, and is split into named steps (transport.Run: start,
// serve, stop; classify's compileRule: one step per part of a rule).
const maxFuncLines = 80

// longFuncs are the functions over the budget today, each with its
// length when listed, which it may not exceed, and why it is whole. The
// list only shrinks: a function split below the budget leaves it (the
// test says so), and a new long function is split rather than added.
// Keys are "file name" for a function, "file Type.name" for a method.
var longFuncs = map[string]int{}

// devTools are the folders of development tools beside the product
// (ARCHITECTURE.md, "Packages": dev/ holds them all, scripts/ the shell
// the Makefile and CI run), which the budget does not cover.
var devTools = []string{"dev/", "scripts/"}

// TestFunctionLength: no function of the product code (tests, generated
// files and the development tools aside) is longer than maxFuncLines, but
// the listed few.
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
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if ast.IsGenerated(f) {
			return
		}
		for _, lf := range longFunctions(fset, f) {
			key := rel + " " + lf.name
			seen[key] = true
			switch was, listed := longFuncs[key]; {
			case !listed:
				t.Errorf("%s: %s is %d lines, over the budget of %d: split it into named steps", rel, lf.name, lf.lines, maxFuncLines)
			case lf.lines > was:
				t.Errorf("%s: %s grew to %d lines (listed at %d): split it rather than let it grow", rel, lf.name, lf.lines, was)
			}
		}
	})
	for key := range longFuncs {
		if !seen[key] {
			t.Errorf("%s is within the budget now (or gone): remove it from longFuncs", key)
		}
	}
}

// longFunc is a function over the budget: its name ("Type.name" for a
// method) and length in lines.
type longFunc struct {
	name  string
	lines int
}

// longFunctions lists the functions and methods of f, with a body, that
// are longer than maxFuncLines.
func longFunctions(fset *token.FileSet, f *ast.File) []longFunc {
	var out []longFunc
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
		if n <= maxFuncLines {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			name = receiverType(fd.Recv.List[0].Type) + "." + name
		}
		out = append(out, longFunc{name, n})
	}
	return out
}

// receiverType is the name of a method's receiver type, without pointer
// or type parameters: T for T, *T, T[P] and *T[P].
func receiverType(e ast.Expr) string {
	name := strings.TrimPrefix(types.ExprString(e), "*")
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	return name
}

// TestLongFunctions: the budget counts from the func keyword to the
// closing brace, names methods by their type, and skips declarations
// without a body.
func TestLongFunctions(t *testing.T) {
	body := func(lines int) string { // a function of exactly lines lines
		return " {\n" + strings.Repeat("\t_ = 0\n", lines-2) + "}\n"
	}
	src := "package p\n\n" +
		"func short()" + body(maxFuncLines) +
		"func long()" + body(maxFuncLines+1) +
		"type T[P any] struct{}\n" +
		"func (t *T[P]) long()" + body(maxFuncLines+2) +
		"func asm()\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := longFunctions(fset, f)
	want := []longFunc{{"long", maxFuncLines + 1}, {"T.long", maxFuncLines + 2}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("got %v, want %v", got[i], want[i])
		}
	}
}
