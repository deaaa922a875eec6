//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codexec/codex/internal/fsat"
	"golang.org/x/sys/unix"
)

// waitGone waits until p no longer exists.
func waitGone(t *testing.T, p string) {
	t.Helper()
	for i := 0; i < 5000; i++ {
		if _, err := os.Lstat(p); err != nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s was never removed", p)
}

// TestWatcherKeepsHeldPlaceholder: a helper that could not mount on its
// placeholder watches it, but must not remove the directory the host holds
// for it (others' mounts on it would be detached): it removes what the
// command put inside and takes write bits back, and the run fails. A
// directory the command put in its place is removed.
func TestWatcherKeepsHeldPlaceholder(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".git")
	if err := os.Mkdir(p, 0o555); err != nil {
		t.Fatal(err)
	}
	id, err := fsat.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	keep := map[string]fsat.ID{p: id}
	w, err := watchProtected([]string{p}, keep, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.finish(0); got != 0 {
		t.Errorf("untouched placeholder: %d, want 0", got)
	}
	if got, err := fsat.Lstat(p); err != nil || got != id {
		t.Fatalf("the held placeholder was removed: %v", err)
	}

	w, _ = watchProtected([]string{p}, keep, false)
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	waitGone(t, filepath.Join(p, "hooks"))
	if got := w.finish(0); got != 1 {
		t.Errorf("filled placeholder: %d, want 1", got)
	}
	fi, err := os.Lstat(p)
	if got, _ := fsat.Lstat(p); err != nil || got != id || fi.Mode().Perm() != 0o555 {
		t.Fatalf("the held placeholder was not kept as it was: %v %v", fi, err)
	}

	// The command replaced it: another identity (the host holds the old
	// directory open, so its inode is not reused), removed.
	held, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(held)
	w, _ = watchProtected([]string{p}, keep, false)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p, 0o555); err != nil {
		t.Fatal(err)
	}
	waitGone(t, p)
	if got := w.finish(0); got != 1 {
		t.Errorf("replaced placeholder: %d, want 1", got)
	}
}

// TestWatcherIgnoresLocks: an empty read-only directory a command makes at
// a watched name and holds a shared flock on, as the host holds
// placeholders, is still removed: only the identity recorded in the plan
// is kept.
func TestWatcherIgnoresLocks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".agents")
	w, err := watchProtected([]string{p}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	// Made and locked aside, then moved into place: the watcher may
	// remove it the moment it appears.
	aside := filepath.Join(dir, "aside")
	if err := os.Mkdir(aside, 0o555); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(aside, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(aside, p); err != nil {
		t.Fatal(err)
	}
	waitGone(t, p)
	if got := w.finish(0); got != 1 {
		t.Errorf("created and locked: %d, want 1", got)
	}
}

// TestWatcherSparesHeldForFSHelper: an fs helper's watcher (spareHeld)
// leaves alone another run's placeholder that appears after it started,
// an empty read-only directory held by a lock; it still removes one that
// nobody holds.
func TestWatcherSparesHeldForFSHelper(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".git")
	// Held before the watcher starts: made after it, the placeholder could
	// be removed between its mkdir and its lock (the host guard retries
	// then, HostGuard.acquire), and this run would count as having
	// created it. Every sweep, the first and the polled ones, must spare it.
	if err := os.Mkdir(p, 0o555); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	w, err := watchProtected([]string{p}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * protectPoll)
	if got := w.finish(0); got != 0 {
		t.Errorf("held placeholder: %d, want 0", got)
	}
	if _, err := os.Lstat(p); err != nil {
		t.Fatalf("a held placeholder was removed: %v", err)
	}
	unix.Close(fd)
	w, _ = watchProtected([]string{p}, nil, true)
	waitGone(t, p)
	if got := w.finish(0); got != 1 {
		t.Errorf("unheld: %d, want 1", got)
	}
}
