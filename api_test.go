package acpguard

import (
	"bytes"
	"flag"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateAPI = flag.Bool("update-api", false, "rewrite testdata/api.golden from the package's exported API")

// exportedAPI lists the package's exported declarations, without their
// docs or bodies, in go doc's order: what a caller can name.
func exportedAPI(t *testing.T) string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := doc.New(pkgs["acpguard"], "github.com/acp-guard/acp-guard", 0)
	var b bytes.Buffer
	decl := func(n ast.Node) {
		if err := (&printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}).Fprint(&b, fset, n); err != nil {
			t.Fatal(err)
		}
		b.WriteString("\n")
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			decl(v.Decl)
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			f.Decl.Body, f.Decl.Doc = nil, nil
			decl(f.Decl)
		}
	}
	values(p.Consts)
	values(p.Vars)
	funcs(p.Funcs)
	for _, ty := range p.Types {
		ty.Decl.Doc = nil
		decl(ty.Decl)
		values(ty.Consts)
		values(ty.Vars)
		funcs(ty.Funcs)
		funcs(ty.Methods)
	}
	return b.String()
}

// TestExportedAPI: the exported API is the one in testdata/api.golden, so
// that a change of the library's surface is deliberate: regenerate it with
// `go test . -run TestExportedAPI -update-api` and review the diff.
func TestExportedAPI(t *testing.T) {
	got := exportedAPI(t)
	golden := filepath.Join("testdata", "api.golden")
	if *updateAPI {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (create it with -update-api)", err)
	}
	if got != string(want) {
		t.Errorf("the exported API differs from %s; if the change is deliberate, run go test . -run TestExportedAPI -update-api and review the diff.\ngot:\n%s", golden, got)
	}
}

// TestReportTypesAreTheLibrarys: the reports a caller gets (OnTurn,
// ReplayResult.Turns) are made of the library's own types, never the
// packages doc.go says may change.
func TestReportTypesAreTheLibrarys(t *testing.T) {
	api := exportedAPI(t)
	start := strings.Index(api, "type TurnReport struct")
	end := strings.Index(api[start:], "\n}\n")
	for _, pkg := range []string{"guard.", "policy.", "classify."} {
		if strings.Contains(api[start:start+end], pkg) {
			t.Errorf("TurnReport names a type of package %s", strings.TrimSuffix(pkg, "."))
		}
	}
}
