package sizecheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSourceSizes logs (t.Log, it does not fail) every non-test Go file
// of the module longer than WarnFileLines and every function or method in
// one longer than WarnFuncLines; `go test -v` shows them. Function
// literals count as part of their function. It fails only when it cannot
// read the module.
func TestSourceSizes(t *testing.T) {
	root := moduleRoot(t)
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		files++
		rel, _ := filepath.Rel(root, path)
		checkFile(t, path, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no Go files under %s", root)
	}
}

// checkFile logs the notes of oversized on the file at path (rel for
// messages).
func checkFile(t *testing.T, path, rel string) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return
	}
	notes, err := oversized(rel, src)
	if err != nil {
		t.Error(err)
	}
	for _, n := range notes {
		t.Log(n)
	}
}

// oversized returns a note for the file src (named rel) if it is longer
// than WarnFileLines, and one for each of its functions longer than
// WarnFuncLines.
func oversized(rel string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var notes []string
	if n := fset.File(f.Pos()).LineCount(); n > WarnFileLines {
		notes = append(notes, fmt.Sprintf("%s: %d lines, over %d: does it hold more than one thing?", rel, n, WarnFileLines))
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		first, last := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
		if n := last - first + 1; n > WarnFuncLines {
			notes = append(notes, fmt.Sprintf("%s:%d: %s is %d lines, over %d: does it do more than one thing?", rel, first, funcName(fd), n, WarnFuncLines))
		}
	}
	return notes, nil
}

// funcName is the name of fd, with its receiver type for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// moduleRoot is the directory of the go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// TestOversized checks the notes on synthetic sources: a function one line
// over WarnFuncLines (a method, named with its receiver) and a file over
// WarnFileLines get one each; sizes at the limits get none.
func TestOversized(t *testing.T) {
	body := func(lines int) string { return strings.Repeat("\t_ = 0\n", lines-2) }
	src := "package p\n\ntype T struct{}\n\nfunc (*T) long() {\n" + body(WarnFuncLines+1) + "}\n\nfunc ok() {\n" + body(WarnFuncLines) + "}\n"
	notes, err := oversized("p.go", []byte(src))
	want := []string{fmt.Sprintf("p.go:5: T.long is %d lines, over %d: does it do more than one thing?", WarnFuncLines+1, WarnFuncLines)}
	if err != nil || !slices.Equal(notes, want) {
		t.Errorf("functions: %q, %v; want %q", notes, err, want)
	}
	long := "package p\n" + strings.Repeat("\n", WarnFileLines)
	notes, err = oversized("q.go", []byte(long))
	want = []string{fmt.Sprintf("q.go: %d lines, over %d: does it hold more than one thing?", WarnFileLines+1, WarnFileLines)}
	if err != nil || !slices.Equal(notes, want) {
		t.Errorf("file: %q, %v; want %q", notes, err, want)
	}
	if notes, err := oversized("r.go", []byte("package p\n"+strings.Repeat("\n", WarnFileLines-1))); err != nil || len(notes) != 0 {
		t.Errorf("a file of %d lines: %q, %v", WarnFileLines, notes, err)
	}
	if _, err := oversized("bad.go", []byte("package")); err == nil {
		t.Error("a file that does not parse: no error")
	}
}
