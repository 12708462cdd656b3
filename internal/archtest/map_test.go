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

// changeRows are the changes ARCHITECTURE.md's "Where to change X" table
// must keep a row for (the first cell starts with the key): the four a
// newcomer was found to need most, each of which once touched files the
// page did not name.
var changeRows = []string{
	"a provider error",               // a new provider wording: one rule, one fixture
	"a recovery action",              // one part plus one row
	"how a frame reaches the client", // the emit road and the pass-through road
	"a store backend",                // one file plus one registration
	"a new name or concept",          // one word, one place
}

// notDeclared are the backticked words of the table that are not Go
// names, each for a reason.
var notDeclared = map[string]bool{
	"recovery.action": true, // a member of the ProviderError's JSON
	"runX":            true, // a pattern: a command's run function
}

var (
	goName   = regexp.MustCompile(`^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?$`)
	pathLike = regexp.MustCompile(`^[\w.*<>/-]+$`)
	// fileExt are the endings that make a word a file's name.
	fileExt = map[string]bool{".go": true, ".json": true, ".md": true, ".golden": true, ".sh": true, ".mk": true, ".mjs": true, ".txtar": true}
)

// TestWhereToChangeX keeps the table honest row by row: it has a row for
// each of changeRows; every path a row names exists (a file, a folder or
// a pattern: <agent> and * stand for any name), from the root or in a
// package the row names; and every Go name a row names — a function, a
// type, a method (Recv.name), a value, a test — is declared in a package
// the row names.
func TestWhereToChangeX(t *testing.T) {
	root := moduleRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n## Where to change X\n")
	if start < 0 {
		t.Fatal(`ARCHITECTURE.md has no "## Where to change X" section`)
	}
	section := text[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	firstLine := strings.Count(text[:start+1], "\n") + 1
	var rows []string
	found := map[string]bool{}
	for i, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| to change ") {
			continue
		}
		rows = append(rows, line)
		for _, k := range changeRows {
			if strings.HasPrefix(line, "| "+k) {
				found[k] = true
			}
		}
		checkChangeRow(t, root, firstLine+i, line)
	}
	for _, k := range changeRows {
		if !found[k] {
			t.Errorf("ARCHITECTURE.md, Where to change X: no row for %q", k)
		}
	}
	if len(rows) < len(changeRows) {
		t.Errorf("the table has %d rows", len(rows))
	}
}

// checkChangeRow checks the paths and Go names of one row of the table.
func checkChangeRow(t *testing.T, root string, n int, line string) {
	t.Helper()
	glob := func(p string) string {
		return regexp.MustCompile(`<[^>]*>`).ReplaceAllString(strings.TrimSuffix(p, "/"), "*")
	}
	there := func(p string) bool {
		m, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(glob(p))))
		return len(m) > 0
	}
	isDir := func(p string) bool {
		fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
		return err == nil && fi.IsDir()
	}
	var tokens []string
	for _, m := range backticked.FindAllStringSubmatch(line, -1) {
		tokens = append(tokens, m[1])
	}
	// The packages the row is about: the root, every folder it names and
	// the folder of every file it names by its path.
	dirs := []string{"."}
	for _, tok := range tokens {
		switch {
		case strings.Contains(tok, " ") || !pathLike.MatchString(tok):
		case isDir(tok):
			dirs = append(dirs, strings.TrimSuffix(tok, "/"))
		case strings.Contains(tok, "/") && there(tok) && isDir(path.Dir(glob(tok))):
			dirs = append(dirs, path.Dir(glob(tok)))
		}
	}
	for _, tok := range tokens {
		switch {
		case strings.Contains(tok, " ") || notDeclared[tok]:
		case strings.Contains(tok, "/") || fileExt[path.Ext(tok)]:
			ok := there(tok)
			for _, d := range dirs {
				ok = ok || !strings.Contains(tok, "/") && there(path.Join(d, tok))
			}
			if !ok {
				t.Errorf("ARCHITECTURE.md:%d: the change table names %s, which is in none of the row's packages (%s)", n, tok, strings.Join(dirs, ", "))
			}
		case goName.MatchString(tok) && !isDir(tok):
			if !declaredIn(t, root, dirs, tok) {
				t.Errorf("ARCHITECTURE.md:%d: the change table names %s, which none of the row's packages declares (%s)", n, tok, strings.Join(dirs, ", "))
			}
		}
	}
}

// declaredIn reports whether a Go file (tests included) of one of dirs
// declares name.
func declaredIn(t *testing.T, root string, dirs []string, name string) bool {
	t.Helper()
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(d), "*.go"))
		for _, f := range files {
			if declares(t, f, name) {
				return true
			}
		}
	}
	return false
}
