package guard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
	"testing"
)

// maxMethods bounds the methods of any one type of the package: a type
// that needs more carries more than one responsibility (Guard once had
// 128; it is the relay's hooks now, and each part of the guard is its
// own type).
const maxMethods = 30

// TestMethodsPerType counts the methods declared on each type of package
// guard (its non-test files) and fails for any type above maxMethods.
func TestMethodsPerType(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, f := range pkgs["guard"].Files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && len(fd.Recv.List) == 1 {
				count[receiverType(fd.Recv.List[0].Type)]++
			}
		}
	}
	if count["Guard"] == 0 {
		t.Fatal("no methods of Guard found: the count reads nothing")
	}
	var types []string
	for typ := range count {
		types = append(types, typ)
	}
	sort.Strings(types)
	for _, typ := range types {
		if n := count[typ]; n > maxMethods {
			t.Errorf("%s has %d methods (at most %d): split it along its responsibilities", typ, n, maxMethods)
		} else {
			t.Logf("%s: %d", typ, n)
		}
	}
}

// receiverType names a receiver's type: T for T, *T, T[P] and *T[P].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return "?"
		}
	}
}
