package policy

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"slices"
	"testing"
)

// TestActionsListsEveryConstant: Actions holds every constant of type
// Action declared in the package, so the guard's one-row-per-action check
// (guard.TestEveryActionHasARow) sees a new action.
func TestActionsListsEveryConstant(t *testing.T) {
	pkgs, err := goparser.ParseDir(token.NewFileSet(), ".", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range pkgs["policy"].Files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Action" {
					continue
				}
				for _, name := range vs.Names {
					n++
					v := Action(vs.Values[0].(*ast.BasicLit).Value)
					v = v[1 : len(v)-1]
					if !slices.Contains(Actions, v) {
						t.Errorf("Action constant %s (%q) is missing from Actions", name.Name, v)
					}
				}
			}
		}
	}
	if n != len(Actions) {
		t.Errorf("%d Action constants, Actions has %d", n, len(Actions))
	}
}
