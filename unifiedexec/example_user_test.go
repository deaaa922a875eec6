package unifiedexec_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesAsUserCode: the examples (go doc) compile as a user would
// write them: besides their own locals they use only imported packages,
// never a helper or variable of this package's tests (the test binary's
// codex is found in $PATH, as by a user).
func TestExamplesAsUserCode(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	helpers := map[string]bool{} // package-level names of unifiedexec_test
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "unifiedexec_test" {
			continue
		}
		parsed = append(parsed, f)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					helpers[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							helpers[n.Name] = true
						}
					case *ast.TypeSpec:
						helpers[s.Name.Name] = true
					}
				}
			}
		}
	}
	examples := 0
	for _, f := range parsed {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Example") {
				continue
			}
			examples++
			for _, name := range helperUses(fn, helpers) {
				t.Errorf("%s uses %s of the tests, which a user does not have", fn.Name.Name, name)
			}
		}
	}
	if examples == 0 {
		t.Fatal("no examples found")
	}
}

// helperUses lists the names of helpers that fn refers to: identifiers
// that are not a selector's field and not declared inside fn.
func helperUses(fn *ast.FuncDecl, helpers map[string]bool) []string {
	local := map[string]bool{}
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						local[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				local[id.Name] = true
			}
		case *ast.Field:
			for _, id := range n.Names {
				local[id.Name] = true
			}
		}
		return true
	})
	var uses []string
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			ast.Inspect(sel.X, func(m ast.Node) bool {
				if id, ok := m.(*ast.Ident); ok && helpers[id.Name] && !local[id.Name] {
					uses = append(uses, id.Name)
				}
				return true
			})
			return false
		}
		if id, ok := n.(*ast.Ident); ok && helpers[id.Name] && !local[id.Name] {
			uses = append(uses, id.Name)
		}
		return true
	})
	return uses
}
