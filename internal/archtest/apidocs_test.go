package archtest

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// libraryFace are the packages whose exported docs a library user reads
// (go doc): the root package and the packages its API aliases or names.
// Their exported declarations say what a name is, never which file holds
// it — files move; the map of files is ARCHITECTURE.md and each package's
// own documentation.
var libraryFace = []string{".", "guard", "transport", "policy", "replay", "telemetry"}

// TestExportedDocsNameNoFile: no exported declaration (nor an exported
// field) of the library's face names a .go file in its doc.
func TestExportedDocsNameNoFile(t *testing.T) {
	root := moduleRoot(t)
	for _, dir := range libraryFace {
		for _, hit := range docsNamingFiles(t, filepath.Join(root, dir)) {
			t.Errorf("package %s: the doc of %s names a file; say what it is instead (ARCHITECTURE.md maps the files)", dir, hit)
		}
	}
}

// docsNamingFiles returns the exported names in dir whose doc (or, for a
// struct type, an exported field's) names a Go file.
func docsNamingFiles(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	names := func(text, name string) {
		if goFile.MatchString(text) {
			out = append(out, name)
		}
	}
	for name, pkg := range pkgs {
		if strings.HasSuffix(name, "_test") {
			continue
		}
		p := doc.New(pkg, dir, 0)
		values := func(vs []*doc.Value) {
			for _, v := range vs {
				names(v.Doc, strings.Join(v.Names, ","))
				for _, s := range v.Decl.Specs {
					vs := s.(*ast.ValueSpec)
					names(vs.Doc.Text()+vs.Comment.Text(), strings.Join(v.Names, ","))
				}
			}
		}
		funcs := func(fs []*doc.Func, recv string) {
			for _, f := range fs {
				names(f.Doc, recv+f.Name)
			}
		}
		values(p.Consts)
		values(p.Vars)
		funcs(p.Funcs, "")
		for _, ty := range p.Types {
			names(ty.Doc, ty.Name)
			for _, s := range ty.Decl.Specs {
				if st, ok := s.(*ast.TypeSpec).Type.(*ast.StructType); ok {
					for _, f := range st.Fields.List {
						fn := "(embedded)"
						if len(f.Names) > 0 {
							fn = f.Names[0].Name
						}
						names(f.Doc.Text()+f.Comment.Text(), ty.Name+"."+fn)
					}
				}
			}
			values(ty.Consts)
			values(ty.Vars)
			funcs(ty.Funcs, "")
			funcs(ty.Methods, ty.Name+".")
		}
	}
	return out
}
