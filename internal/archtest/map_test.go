package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ARCHITECTURE.md names files by their bare names where the line (a table
// row, a sentence) names the package — the transport row names the
// relay's file bare — or its section is about one package, and it places
// functions in files: `Relay.emit` (`transport/ctl.go`), `flushTo` in
// `transport/loop.go`. Both must be
// true: a file named is in a package the line names (or the module's
// root), and a function placed in a file is declared there.

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	// placed is a name placed in a file: a qualified name followed by the
	// file in parentheses or after "in", or a bare name followed by "in"
	// and the file.
	placed = regexp.MustCompile("`([A-Za-z_]\\w*\\.[A-Za-z_]\\w*)`(?:\\s+\\(|\\s+in\\s+)`([\\w/.-]+\\.go)`" +
		"|`([A-Za-z_]\\w*)`\\s+in\\s+`([\\w/.-]+\\.go)`")
	// sectionDirs are the packages a section of the page is about.
	sectionDirs = map[string]string{"### The guard's parts": "guard"}
)

func TestArchitectureMapResolves(t *testing.T) {
	root := moduleRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	isDir := func(p string) bool {
		fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
		return err == nil && fi.IsDir()
	}
	section := ""
	for n, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "#") {
			section = line
			continue
		}
		// The packages the line is about: the root, its section's, and
		// every package or file path it names.
		dirs := []string{"."}
		if d, ok := sectionDirs[section]; ok {
			dirs = append(dirs, d)
		}
		var files []string
		for _, m := range backticked.FindAllStringSubmatch(line, -1) {
			tok := m[1]
			switch {
			case strings.HasSuffix(tok, ".go"):
				files = append(files, tok)
				if strings.Contains(tok, "/") {
					dirs = append(dirs, path.Dir(tok))
				}
			case isDir(tok):
				dirs = append(dirs, tok)
			case strings.Contains(tok, ".") && isDir(strings.SplitN(tok, ".", 2)[0]):
				dirs = append(dirs, strings.SplitN(tok, ".", 2)[0]) // transport.Run
			}
		}
		there := func(p string) bool {
			m, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(p))) // a name or a pattern (agents*.go)
			return len(m) > 0
		}
		resolve := func(f string) (string, bool) {
			if strings.Contains(f, "/") {
				return f, there(f)
			}
			for _, d := range dirs {
				if p := path.Join(d, f); there(p) {
					return p, true
				}
			}
			return "", false
		}
		for _, f := range files {
			if _, ok := resolve(f); !ok {
				t.Errorf("ARCHITECTURE.md:%d: names %s, which is in none of the packages the line is about (%s)", n+1, f, strings.Join(dirs, ", "))
			}
		}
		for _, m := range placed.FindAllStringSubmatch(line, -1) {
			name, file := m[1]+m[3], m[2]+m[4]
			p, ok := resolve(file)
			if !ok || strings.ContainsAny(p, "*?[") {
				continue // reported above, or a pattern
			}
			if !declares(t, filepath.Join(root, filepath.FromSlash(p)), name) {
				t.Errorf("ARCHITECTURE.md:%d: places %s in %s, which does not declare it", n+1, name, p)
			}
		}
	}
}

// declares reports whether the Go file declares name: a function, a type,
// a value, or — for Recv.name or pkg.name — a method of Recv or a
// function of the file's package.
func declares(t *testing.T, file, name string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	qual, id := "", name
	if i := strings.IndexByte(name, '.'); i >= 0 {
		qual, id = name[:i], name[i+1:]
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name != id {
				continue
			}
			if d.Recv == nil {
				if qual == "" || qual == f.Name.Name || qual == "acpguard" {
					return true
				}
				continue
			}
			if qual == "" || recvName(d.Recv.List[0].Type) == qual {
				return true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.Name == id && (qual == "" || qual == f.Name.Name) {
						return true
					}
					if st, ok := s.Type.(*ast.StructType); ok && s.Name.Name == qual {
						for _, fl := range st.Fields.List {
							for _, fn := range fl.Names {
								if fn.Name == id {
									return true // a field: loop.mu
								}
							}
						}
					}
				case *ast.ValueSpec:
					for _, v := range s.Names {
						if v.Name == id && (qual == "" || qual == f.Name.Name) {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}
