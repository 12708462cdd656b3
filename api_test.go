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
	"regexp"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/internal/pipeline"
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

// TestSurfaceNamesNoUnstablePackage: the supported API (the golden file,
// what `go doc -all .` shows) names no type or value of the packages
// doc.go says may change. Aliases point at package event, the library's
// stable leaf; of transport only the names doc.go lists as supported
// appear; replay is the transcript format, also supported.
func TestSurfaceNamesNoUnstablePackage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "api.golden"))
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"transport.AgentPipes": true, "transport.Result": true, "transport.StartError": true,
		"transport.DefaultGrace": true, "transport.DefaultMaxLine": true}
	unstable := regexp.MustCompile(`\b(?:guard|policy|classify|circuit|catalogue|observers|held|presence|telemetry|transport|seam|kvstore)\.[A-Za-z_][A-Za-z0-9_]*`)
	for _, name := range unstable.FindAllString(string(data), -1) {
		if !allowed[name] {
			t.Errorf("the exported API names %s, of a package that may change", name)
		}
	}
}

// TestNoticesAreTheGuards: the library's notice channels are the values
// the guard reads.
func TestNoticesAreTheGuards(t *testing.T) {
	for lib, g := range map[string]string{NoticesOff: guard.NoticesOff, NoticesThought: guard.NoticesThought, NoticesMessage: guard.NoticesMessage} {
		if lib != g {
			t.Errorf("notice channel %q is the guard's %q", lib, g)
		}
	}
}

// TestOverlayStoreIsThePipelines: the library's OverlayStore is the value
// the pipeline reads.
func TestOverlayStoreIsThePipelines(t *testing.T) {
	if OverlayStore != pipeline.OverlayStore {
		t.Errorf("OverlayStore %q is the pipeline's %q", OverlayStore, pipeline.OverlayStore)
	}
}
