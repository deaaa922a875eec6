package schema_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/codexec/codex/schema"
	"github.com/codexec/codex/wire"
)

// TestCommittedSchemaUpToDate regenerates the schema and compares it with
// the files committed in this directory: a change to a wire type, or to the
// method table, must come with the refreshed files.
func TestCommittedSchemaUpToDate(t *testing.T) {
	dir := t.TempDir()
	if err := schema.Write(dir); err != nil {
		t.Fatal(err)
	}
	want, err := schema.Existing(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := schema.Existing(".")
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for name, b := range want {
		switch old, ok := got[name]; {
		case !ok:
			problems = append(problems, name+": missing")
		case !bytes.Equal(old, b):
			problems = append(problems, name+": differs from the generated schema")
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			problems = append(problems, name+": no longer generated")
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		t.Fatalf("the committed JSON Schema is out of date:\n  %s\nrefresh it from the repository root with\n  %s",
			strings.Join(problems, "\n  "), schema.RefreshCommand)
	}
}

// TestEveryMethodHasItsFiles checks the file set: a params file per method
// (notifications: a .notification.json), a result file per request.
func TestEveryMethodHasItsFiles(t *testing.T) {
	files, err := schema.Generate()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range wire.Methods() {
		names := []string{schema.FileName(m.Name, ".params.json"), schema.FileName(m.Name, ".result.json")}
		if m.Notification {
			names = []string{schema.FileName(m.Name, ".notification.json")}
		}
		for _, name := range names {
			n++
			if _, ok := files[name]; !ok {
				t.Errorf("%s: no %s", m.Name, name)
			}
		}
	}
	if n != len(files) {
		t.Errorf("%d files generated, want %d", len(files), n)
	}
	if files["process_start.params.json"] == nil || files["process_output.notification.json"] == nil {
		t.Error("file names are not method names with / turned into _")
	}
}

// TestGenerateDeterministic: two runs give the same bytes, keys sorted.
func TestGenerateDeterministic(t *testing.T) {
	a, err := schema.Generate()
	if err != nil {
		t.Fatal(err)
	}
	b, err := schema.Generate()
	if err != nil {
		t.Fatal(err)
	}
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s differs between two runs", name)
		}
	}
	s := string(a["process_read.result.json"])
	if i, j := strings.Index(s, `"chunks"`), strings.Index(s, `"closed"`); i < 0 || j < 0 || i > j {
		t.Errorf("keys are not sorted:\n%s", s)
	}
}

// TestWriteRemovesStaleFiles: a generated file of a method that no longer
// exists goes; other files stay.
func TestWriteRemovesStaleFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"gone_method.params.json", "README.md"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := schema.Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone_method.params.json")); !os.IsNotExist(err) {
		t.Errorf("stale file kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Errorf("README.md removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "fs_copy.params.json")); err != nil {
		t.Error(fmt.Errorf("fs_copy.params.json not written: %w", err))
	}
}

// TestDocsDescribeEveryMethod holds docs/protocol.md to the method table:
// the document names every method, and each extension is described in the
// §10 section that its schema files name.
func TestDocsDescribeEveryMethod(t *testing.T) {
	b, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	files, err := schema.Generate()
	if err != nil {
		t.Fatal(err)
	}
	exts := 0
	for _, m := range wire.Methods() {
		named := false
		for _, form := range []string{"`" + m.Name + "`", "`" + m.Name + " ", `"method":"` + m.Name + `"`} {
			named = named || strings.Contains(doc, form)
		}
		if !named {
			t.Errorf("docs/protocol.md does not name `%s`", m.Name)
		}
		if m.Extension == "" {
			continue
		}
		exts++
		heading := "\n### " + strings.TrimPrefix(m.Extension, "§") + " "
		i := strings.Index(doc, heading)
		if i < 0 {
			t.Errorf("%s: docs/protocol.md has no section %s", m.Name, m.Extension)
			continue
		}
		body := doc[i+len(heading):]
		if j := strings.Index(body, "\n## "); j >= 0 {
			body = body[:j]
		}
		if j := strings.Index(body, "\n### "); j >= 0 {
			body = body[:j]
		}
		if !strings.Contains(body, "`"+m.Name) {
			t.Errorf("%s: section %s of docs/protocol.md does not describe it", m.Name, m.Extension)
		}
		want := "docs/protocol.md " + m.Extension
		if !bytes.Contains(files[schema.FileName(m.Name, ".params.json")], []byte(want)) {
			t.Errorf("%s: its params schema does not name %s", m.Name, want)
		}
	}
	if exts < 3 {
		t.Errorf("%d extension methods in the table, want at least 3", exts)
	}
}
