package wire

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"
)

// methodConstants returns the value of every Method… constant declared in
// the package's own (non-test) files, keyed by constant name.
func methodConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	out := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Method") || i >= len(vs.Values) {
						continue
					}
					tv, err := types.Eval(fset, nil, token.NoPos, types.ExprString(vs.Values[i]))
					if err != nil || tv.Value == nil || tv.Value.Kind() != constant.String {
						t.Fatalf("%s: not a string literal (%v)", n.Name, err)
					}
					out[n.Name] = constant.StringVal(tv.Value)
				}
			}
		}
	}
	return out
}

// TestMethodsTableComplete holds Methods to the Method constants: each one
// has exactly one row, and every row names a declared method. A new method
// constant without a row (and so without a JSON Schema) fails here.
func TestMethodsTableComplete(t *testing.T) {
	consts := methodConstants(t)
	if len(consts) < 20 {
		t.Fatalf("found only %d Method constants: %v", len(consts), consts)
	}
	rows := map[string]int{}
	for _, m := range Methods() {
		rows[m.Name]++
		if m.Notification != (m.Result == nil) {
			t.Errorf("%s: a notification has no result and a request has one", m.Name)
		}
	}
	declared := map[string]bool{}
	for name, value := range consts {
		declared[value] = true
		if rows[value] != 1 {
			t.Errorf("%s (%q) has %d rows in Methods(), want 1", name, value, rows[value])
		}
	}
	for name := range rows {
		if !declared[name] {
			t.Errorf("Methods() row %q has no Method constant", name)
		}
	}
}
