package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository root, seen from this package's directory.
const root = "../.."

// skipDirs are folders whose files are not ours to check.
var skipDirs = map[string]bool{".git": true, "bin": true, "node_modules": true, "testdata": true}

// inScope reports whether a file may cite documentation: Go sources,
// Markdown, shell scripts and the Makefile.
func inScope(name string) bool {
	switch filepath.Ext(name) {
	case ".go", ".md", ".sh":
		return true
	}
	return name == "Makefile"
}

// repoResolver resolves a cited path against the citing file's folder,
// then against the repository root.
func repoResolver(citingFile, cited string) (string, bool) {
	for _, p := range []string{filepath.Join(filepath.Dir(citingFile), cited), filepath.Clean(cited)} {
		if st, err := os.Stat(filepath.Join(root, p)); err == nil && !st.IsDir() {
			return filepath.ToSlash(p), true
		}
	}
	return "", false
}

// TestDocReferences checks every reference to a document in the
// repository (see Problems).
func TestDocReferences(t *testing.T) {
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found: %v", err)
	}
	cache := map[string]Doc{}
	docs := func(path string) (Doc, bool) {
		if d, ok := cache[path]; ok {
			return d, true
		}
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			return Doc{}, false
		}
		cache[path] = ParseDoc(string(b))
		return cache[path], true
	}
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// This package's own tests cite made-up documents.
			if skipDirs[d.Name()] || d.Name() == "doccheck" {
				return filepath.SkipDir
			}
			return nil
		}
		if !inScope(d.Name()) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files++
		for _, problem := range Problems(filepath.ToSlash(rel), string(b), repoResolver, docs) {
			t.Error(problem)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d files checked: is the walk rooted right?", files)
	}
	for _, want := range []string{"docs/protocol.md", "docs/sandbox.md", "docs/client.md", "docs/operations.md"} {
		if _, ok := docs(want); !ok {
			t.Errorf("%s is missing", want)
		}
	}
}

// TestProblems holds the checker to its rules on made-up files.
func TestProblems(t *testing.T) {
	existing := map[string]Doc{
		"docs/p.md": ParseDoc("# P\n\n## 1. Transport\n\n### 1.2 WebSocket listener\n\n```\n## 9. not a heading\n```\n## 6. Methods\n"),
	}
	resolve := func(citing, cited string) (string, bool) {
		for _, p := range []string{filepath.Join(filepath.Dir(citing), cited), cited} {
			if _, ok := existing[filepath.ToSlash(p)]; ok {
				return filepath.ToSlash(p), true
			}
		}
		return "", false
	}
	docs := func(p string) (Doc, bool) { d, ok := existing[p]; return d, ok }
	cases := []struct {
		name, file, text string
		want             []string // substrings, one per expected problem
	}{
		{"good section", "a/x.go", "// see docs/p.md §1.2 and §6.", nil},
		{"good relative link", "docs/q.md", "[p](p.md#12-websocket-listener), p.md §1", nil},
		{"not a citation", "a/x.go", `Argv: "cat AGENTS.md", "-md out.md"`, nil},
		{"missing section", "a/x.go", "// docs/p.md §1.3", []string{"no section §1.3"}},
		{"section in a code block", "a/x.go", "// docs/p.md §9", []string{"no section §9"}},
		{"missing continuation", "a/x.go", "// docs/p.md §1.2, §7", []string{"no section §7"}},
		{"range", "a/x.go", "// docs/p.md §1–§8", []string{"no section §8"}},
		{"missing anchor", "docs/q.md", "[p](p.md#7-nothing)", []string{"no heading #7-nothing"}},
		{"missing file", "a/x.go", "// docs/nope.md §1", []string{"docs/nope.md does not exist"}},
		{"old spec name", "a/x.go", "// (protocol.md §6.5)", []string{"protocol.md does not exist"}},
		{"old spec name without section", "a/x.go", "// the style.md rules", []string{"style.md does not exist"}},
		{"outside folder", "Makefile", "# ../" + outsideMarker + "/README.md", []string{outsideMarker}},
	}
	for _, c := range cases {
		got := Problems(c.file, c.text, resolve, docs)
		if len(got) != len(c.want) {
			t.Errorf("%s: got %q, want %d problems", c.name, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: problem %q does not mention %q", c.name, got[i], w)
			}
		}
	}
}

// TestSlug checks the anchors of a few headings of the shape our
// documents use.
func TestSlug(t *testing.T) {
	for title, want := range map[string]string{
		"1.2 WebSocket listener":           "12-websocket-listener",
		"6.5 `process/start`":              "65-processstart",
		"12. The command/exec family":      "12-the-commandexec-family",
		"2.2 Legacy policies (kebab-case)": "22-legacy-policies-kebab-case",
		"13. `codex exec run`":             "13-codex-exec-run",
	} {
		if got := Slug(title); got != want {
			t.Errorf("Slug(%q) = %q, want %q", title, got, want)
		}
	}
}
