package fshelper_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// tempDir is t.TempDir with its symbolic links resolved, so that no-follow
// tests start from a link-free path.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// fixture builds this tree and returns its root:
//
//	file.txt        "hello"
//	empty.txt       ""
//	dir/inner.txt   "inner"
//	empty/          an empty directory
//	link     ->     file.txt
//	dirlink  ->     dir
//	dangling ->     missing
//	fifo            a FIFO
func fixture(t *testing.T) string {
	t.Helper()
	root := tempDir(t)
	writeFile(t, filepath.Join(root, "file.txt"), "hello")
	writeFile(t, filepath.Join(root, "empty.txt"), "")
	mkdir(t, filepath.Join(root, "dir"))
	writeFile(t, filepath.Join(root, "dir", "inner.txt"), "inner")
	mkdir(t, filepath.Join(root, "empty"))
	symlink(t, "file.txt", filepath.Join(root, "link"))
	symlink(t, "dir", filepath.Join(root, "dirlink"))
	symlink(t, "missing", filepath.Join(root, "dangling"))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// wantContent checks a file's exact contents.
func wantContent(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s = %q, want %q", path, got, want)
	}
}

// wantMissing checks that nothing exists at path, not even a link.
func wantMissing(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("%s exists (lstat: %v)", path, err)
	}
}

// wantExists checks that something exists at path, maybe a link.
func wantExists(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// wantLink checks that path is a symbolic link to target.
func wantLink(t *testing.T, path, target string) {
	t.Helper()
	got, err := os.Readlink(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != target {
		t.Fatalf("%s -> %q, want %q", path, got, target)
	}
}

// rooted adapts a check on a path below the fixture root.
func rooted(check func(t *testing.T, path string), rel string) func(t *testing.T, root string) {
	return func(t *testing.T, root string) {
		t.Helper()
		check(t, filepath.Join(root, rel))
	}
}
