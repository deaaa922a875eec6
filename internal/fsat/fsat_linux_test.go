//go:build linux

package fsat

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRemoveAllAtNeverFollows(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "victim", "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "victim", "a", "b", "f"), []byte("x"), 0o644))
	must(os.Symlink(outside, filepath.Join(dir, "victim", "a", "link")))
	must(os.Symlink(outside, filepath.Join(dir, "top")))

	fd, err := OpenPath(unix.AT_FDCWD, dir)
	must(err)
	defer unix.Close(fd)
	must(RemoveAllAt(fd, "victim"))
	must(RemoveAllAt(fd, "top"))
	must(RemoveAllAt(fd, "missing"))
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Fatalf("followed a symlink: %v", err)
	}
}

func TestOpenRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenPath(unix.AT_FDCWD, filepath.Join(dir, "link")); err != unix.ELOOP {
		t.Fatalf("final symlink: %v, want ELOOP", err)
	}
	if _, err := OpenPath(unix.AT_FDCWD, filepath.Join(dir, "link", ".")); err != unix.ELOOP {
		t.Fatalf("symlink on the way: %v, want ELOOP", err)
	}
	fd, err := OpenPath(unix.AT_FDCWD, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := OpenPath(fd, "../"+filepath.Base(dir)); err != unix.EXDEV {
		t.Fatalf("escaping the handle: %v, want EXDEV", err)
	}
	want, err := Lstat(filepath.Join(dir, "real"))
	if err != nil {
		t.Fatal(err)
	}
	rfd, err := OpenVerified(fd, "real", want)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(rfd)
	if _, err := OpenVerified(fd, "real", ID{Dev: want.Dev, Ino: want.Ino + 1}); err == nil {
		t.Fatal("a different identity was accepted")
	}
}

// TestOpenChildDir is the fallback of RemoveAllAt where a seccomp filter
// hides openat2: one component only, never a symlink.
func TestOpenChildDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	fd, err := openChildDir(dfd, "d")
	if err != nil {
		t.Fatalf("d: %v", err)
	}
	unix.Close(fd)
	for _, name := range []string{"l", "d/..", "..", "", "d/x"} {
		if fd, err := openChildDir(dfd, name); err == nil {
			unix.Close(fd)
			t.Errorf("%q opened", name)
		}
	}
}
