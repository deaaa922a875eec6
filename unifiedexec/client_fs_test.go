package unifiedexec_test

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFilesystemCalls(t *testing.T) {
	ctx, c := supervised(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	if err := c.WriteFile(ctx, a, []byte("alpha"), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Copy(ctx, a, b, false); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ReadFile(ctx, b, nil); err != nil || string(got) != "alpha" {
		t.Fatalf("copy: %q %v", got, err)
	}
	ents, err := c.ReadDirectory(ctx, dir)
	if err != nil || len(ents) != 2 {
		t.Fatalf("readDirectory: %v %v", ents, err)
	}
	_ = os.Symlink(a, filepath.Join(dir, "link"))
	if p, err := c.Canonicalize(ctx, "file://"+filepath.Join(dir, "link")); err != nil || p != "file://"+a {
		t.Fatalf("canonicalize: %q %v", p, err)
	}
}
