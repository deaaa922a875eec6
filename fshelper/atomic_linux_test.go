package fshelper_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/fshelper"
)

// smallFS mounts a tmpfs of size bytes on a new directory and unmounts it
// at the end of the test. It skips when not root or when mounting fails.
func smallFS(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := tempDir(t)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+size+",mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// names lists the directory's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

func assertContent(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes, want the %d bytes expected", path, len(got), len(want))
	}
}

// TestWriteFileFullFilesystemKeepsOldContent writes 2 MiB over a 600 KiB
// file on a 1 MiB tmpfs: the write must fail with ENOSPC and leave the old
// file whole, and no temporary file.
func TestWriteFileFullFilesystemKeepsOldContent(t *testing.T) {
	dir := smallFS(t, "1m")
	path := filepath.Join(dir, "f.bin")
	old := pattern(600<<10, 1)
	if err := os.WriteFile(path, old, 0o640); err != nil {
		t.Fatal(err)
	}
	err := fshelper.WriteFile(path, pattern(2<<20, 2), fshelper.Options{})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WriteFile on a full filesystem: %v, want ENOSPC", err)
	}
	assertContent(t, path, old)
	if n := names(t, dir); len(n) != 1 || n[0] != "f.bin" {
		t.Fatalf("directory after the failed write: %v", n)
	}
	// The freed space is usable: a write that fits succeeds.
	small := pattern(100<<10, 3)
	if err := fshelper.WriteFile(path, small, fshelper.Options{}); err != nil {
		t.Fatal(err)
	}
	assertContent(t, path, small)
}

// TestCopyFullFilesystemKeepsOldContent is the same for fs/copy of a file.
func TestCopyFullFilesystemKeepsOldContent(t *testing.T) {
	dir := smallFS(t, "1m")
	src := filepath.Join(tempDir(t), "big.bin")
	if err := os.WriteFile(src, pattern(2<<20, 4), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst.bin")
	old := pattern(600<<10, 5)
	if err := os.WriteFile(dst, old, 0o644); err != nil {
		t.Fatal(err)
	}
	err := fshelper.Copy(src, dst, fshelper.CopyOptions{})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Copy on a full filesystem: %v, want ENOSPC", err)
	}
	assertContent(t, dst, old)
	if n := names(t, dir); len(n) != 1 {
		t.Fatalf("directory after the failed copy: %v", n)
	}
}

// TestWriteFileHardLinkFullFilesystem: a file with two links is written in
// place, with its space reserved first, so a write that does not fit fails
// before the first byte changes and one that fits reaches both names.
func TestWriteFileHardLinkFullFilesystem(t *testing.T) {
	dir := smallFS(t, "1m")
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	old := pattern(600<<10, 6)
	if err := os.WriteFile(a, old, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	if err := fshelper.WriteFile(a, pattern(2<<20, 7), fshelper.Options{}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WriteFile: %v, want ENOSPC", err)
	}
	assertContent(t, a, old)
	small := []byte("new content")
	if err := fshelper.WriteFile(a, small, fshelper.Options{}); err != nil {
		t.Fatal(err)
	}
	assertContent(t, b, small)
	if n := names(t, dir); len(n) != 2 {
		t.Fatalf("directory: %v", n)
	}
}

// TestWriteFileKeepsModeOwnerAndLinks: the replaced file keeps its mode and
// owner; a link path stays a link whose target gets the data, through a
// chain of relative links; no temporary file stays behind.
func TestWriteFileKeepsModeOwnerAndLinks(t *testing.T) {
	dir := tempDir(t)
	sub := filepath.Join(dir, "sub")
	mkdir(t, sub)
	target := filepath.Join(sub, "target.txt")
	writeFile(t, target, "old")
	if err := os.Chmod(target, 0o604); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(target, 1234, 5678); err != nil {
			t.Fatal(err)
		}
	}
	symlink(t, "sub/../sub/target.txt", filepath.Join(dir, "hop"))
	symlink(t, "hop", filepath.Join(dir, "link"))
	if err := fshelper.WriteFile(filepath.Join(dir, "link"), []byte("new"), fshelper.Options{}); err != nil {
		t.Fatal(err)
	}
	assertContent(t, target, []byte("new"))
	for _, l := range []string{"link", "hop"} {
		if fi, err := os.Lstat(filepath.Join(dir, l)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a link: %v %v", l, fi, err)
		}
	}
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o604 {
		t.Fatalf("mode %v, want 0604", fi.Mode())
	}
	if st := fi.Sys().(*syscall.Stat_t); os.Geteuid() == 0 && (st.Uid != 1234 || st.Gid != 5678) {
		t.Fatalf("owner %d:%d, want 1234:5678", st.Uid, st.Gid)
	}
	if n := names(t, sub); len(n) != 1 {
		t.Fatalf("temporary file left: %v", n)
	}
	// A dangling link creates its target, as open(O_CREAT) does.
	symlink(t, "sub/created.txt", filepath.Join(dir, "dangling"))
	if err := fshelper.WriteFile(filepath.Join(dir, "dangling"), []byte("x"), fshelper.Options{}); err != nil {
		t.Fatal(err)
	}
	assertContent(t, filepath.Join(sub, "created.txt"), []byte("x"))
	// Without following, a link is refused and left alone.
	err = fshelper.WriteFile(filepath.Join(dir, "link"), []byte("no"), fshelper.Options{NoFollowSymlinks: true})
	if !errors.Is(err, fshelper.ErrSymlink) {
		t.Fatalf("no-follow write through a link: %v", err)
	}
	assertContent(t, target, []byte("new"))
	// A directory is EISDIR, a device is written in place (not replaced).
	if err := fshelper.WriteFile(sub, []byte("x"), fshelper.Options{}); !errors.Is(err, syscall.EISDIR) {
		t.Fatalf("write onto a directory: %v", err)
	}
	if err := fshelper.WriteFile("/dev/null", []byte("x"), fshelper.Options{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat("/dev/null"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a device: %v %v", fi, err)
	}
}

// TestCopyGivesSourceModeKeepsOwner: a copied file gets the source's mode
// exactly and keeps an existing destination's owner.
func TestCopyGivesSourceModeKeepsOwner(t *testing.T) {
	dir := tempDir(t)
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	writeFile(t, src, "data")
	if err := os.Chmod(src, 0o751); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dst, "old")
	if os.Geteuid() == 0 {
		if err := os.Chown(dst, 4321, 8765); err != nil {
			t.Fatal(err)
		}
	}
	if err := fshelper.Copy(src, dst, fshelper.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	assertContent(t, dst, []byte("data"))
	fi, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o751 {
		t.Fatalf("mode %v, want 0751", fi.Mode())
	}
	if st := fi.Sys().(*syscall.Stat_t); os.Geteuid() == 0 && (st.Uid != 4321 || st.Gid != 8765) {
		t.Fatalf("owner %d:%d, want 4321:8765", st.Uid, st.Gid)
	}
	if n := names(t, dir); len(n) != 2 {
		t.Fatalf("directory: %v", n)
	}
}

// TestWriteFileOntoMountPoint: a file that is a mount point (as a sandbox
// binds files) cannot be renamed over; it is written in place instead.
func TestWriteFileOntoMountPoint(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root")
	}
	dir := tempDir(t)
	path := filepath.Join(dir, "bound.txt")
	writeFile(t, path, "old")
	if err := unix.Mount(path, path, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(path, unix.MNT_DETACH) })
	if err := fshelper.WriteFile(path, []byte("new"), fshelper.Options{}); err != nil {
		t.Fatal(err)
	}
	assertContent(t, path, []byte("new"))
	if n := names(t, dir); len(n) != 1 {
		t.Fatalf("directory: %v", n)
	}
}
