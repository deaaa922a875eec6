package wire_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsOnlyRPCAndStd keeps wire light for clients: package rpc and
// the standard library, nothing of the server.
func TestImportsOnlyRPCAndStd(t *testing.T) {
	pkg, err := build.Default.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if imp == "github.com/codexec/codex/rpc" {
			continue
		}
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("wire imports %s", imp)
		}
	}
}
