//go:build linux

package sandbox_test

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/fsat"
	"github.com/codexec/codex/sandbox"
)

// fakeWatch is a PlaceholderWatch that records what it is told, and
// whether the placeholder still existed when it was let go.
type fakeWatch struct {
	mu    sync.Mutex
	held  map[uint64]string
	next  uint64
	order []string
}

func (f *fakeWatch) Hold(parentfd, fd int, path string, id fsat.ID) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if got, err := fsat.Stat(fd); err != nil || got != id {
		f.order = append(f.order, "bad hold "+path)
	}
	if _, _, err := fsat.StatAt(parentfd, filepath.Base(path)); err != nil {
		f.order = append(f.order, "bad parent "+path)
	}
	f.next++
	f.held[f.next] = path
	f.order = append(f.order, "hold "+filepath.Base(path))
	return f.next
}

func (f *fakeWatch) Let(token uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := f.held[token]
	delete(f.held, token)
	if _, err := os.Lstat(path); err != nil {
		f.order = append(f.order, "let after removal "+path)
	}
	f.order = append(f.order, "let "+filepath.Base(path))
}

// TestPlaceholderWatchHoldLet: the process's watch is told of every
// placeholder a run holds before the run goes on, and let go of each
// before its removal.
func TestPlaceholderWatchHoldLet(t *testing.T) {
	w := &fakeWatch{held: map[uint64]string{}}
	sandbox.WatchPlaceholders(w)
	defer sandbox.WatchPlaceholders(nil)
	dir := tempDir(t)
	_, g := guardedPlan(t, dir)
	g.Release()
	w.mu.Lock()
	defer w.mu.Unlock()
	holds, lets := 0, 0
	for _, e := range w.order {
		switch {
		case len(e) > 5 && e[:5] == "hold ":
			holds++
		case len(e) > 4 && e[:4] == "let ":
			lets++
		default:
			t.Errorf("watch: %s", e)
		}
	}
	if holds != 3 || lets != 3 || len(w.held) != 0 {
		t.Errorf("watch saw %v, want three holds, then three lets", w.order)
	}
}

// leftover makes an empty read-only metadata folder in dir, as a dead
// server leaves its placeholder, and returns its path, its identity and
// its parent's.
func leftover(t *testing.T, dir, name string) (string, fsat.ID, fsat.ID) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o555); err != nil {
		t.Fatal(err)
	}
	id, err := fsat.Lstat(p)
	parent, err2 := fsat.Lstat(dir)
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	return p, id, parent
}

// TestRemoveRecordedPlaceholder: the next server removes a recorded
// placeholder only while it is that empty folder, below that parent,
// reached without a symlink, and nobody uses it.
func TestRemoveRecordedPlaceholder(t *testing.T) {
	dir := tempDir(t)
	remove := func(name string, id, parent fsat.ID) bool {
		t.Helper()
		ok, err := sandbox.RemoveRecordedPlaceholder(dir, parent, name, id)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return ok
	}
	p, id, parent := leftover(t, dir, ".git")
	if remove(".git", id, fsat.ID{Dev: parent.Dev, Ino: parent.Ino + 1}) || remove(".git", fsat.ID{Dev: id.Dev, Ino: id.Ino + 1}, parent) {
		t.Fatal("removed with another identity on record")
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = unix.Flock(fd, unix.LOCK_SH)
	if remove(".git", id, parent) {
		t.Fatal("removed a placeholder another run holds")
	}
	unix.Close(fd)
	// A run that binds the leftover as a carve-out guards it.
	_, g := guardedPlan(t, dir)
	if remove(".git", id, parent) {
		t.Fatal("removed a placeholder a run binds as a carve-out")
	}
	g.Release()
	if !remove(".git", id, parent) {
		t.Fatal("the unused leftover was not removed")
	}
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Fatalf("still there: %v", err)
	}

	_, id, parent = leftover(t, dir, ".codex")
	if err := os.Chmod(filepath.Join(dir, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	if remove(".codex", id, parent) {
		t.Fatal("removed a folder with write bits")
	}
	os.WriteFile(filepath.Join(dir, ".codex", "config.toml"), nil, 0o644)
	os.Chmod(filepath.Join(dir, ".codex"), 0o555)
	if remove(".codex", id, parent) {
		t.Fatal("removed a folder with a file in it")
	}

	other := tempDir(t)
	_, id, parent = leftover(t, other, ".agents")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	if ok, _ := sandbox.RemoveRecordedPlaceholder(link, parent, ".agents", id); ok {
		t.Fatal("followed a symlink to the parent")
	}
	if ok, _ := sandbox.RemoveRecordedPlaceholder(other, parent, "src", id); ok {
		t.Fatal("removed a folder whose name is not a protected one")
	}
}

// TestRemoveOrphanedPlaceholder: the watchdog's reference shares the dead
// holder's lock; it removes the placeholder unless another holds it, and
// never what took its name.
func TestRemoveOrphanedPlaceholder(t *testing.T) {
	dir := tempDir(t)
	hold := func(name string) (parentfd, fd int, id fsat.ID) {
		t.Helper()
		_, id, _ = leftover(t, dir, name)
		parentfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		holder, err := unix.Open(filepath.Join(dir, name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		_ = unix.Flock(holder, unix.LOCK_SH)
		placeholderLikeRead(holder) // the holder's checks left the offset at the end
		fd, _ = unix.Dup(holder)
		unix.Close(holder) // the holder is dead; our duplicate keeps its lock
		t.Cleanup(func() { unix.Close(parentfd); unix.Close(fd) })
		return parentfd, fd, id
	}
	pfd, fd, id := hold(".git")
	if ok, err := sandbox.RemoveOrphanedPlaceholder(pfd, fd, ".git", id); !ok || err != nil {
		t.Fatalf("the dead holder's placeholder stays: %v", err)
	}

	pfd, fd, id = hold(".agents")
	other, _ := unix.Open(filepath.Join(dir, ".agents"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	_ = unix.Flock(other, unix.LOCK_SH)
	if ok, _ := sandbox.RemoveOrphanedPlaceholder(pfd, fd, ".agents", id); ok {
		t.Fatal("removed a placeholder another run still holds")
	}
	unix.Close(other)

	pfd, fd, id = hold(".codex")
	os.Remove(filepath.Join(dir, ".codex"))
	os.Mkdir(filepath.Join(dir, ".codex"), 0o555)
	if ok, _ := sandbox.RemoveOrphanedPlaceholder(pfd, fd, ".codex", id); ok {
		t.Fatal("removed the folder put in the placeholder's place")
	}
	if ents, _ := os.ReadDir(dir); !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.Name() == ".codex" }) {
		t.Fatal("the folder put in the placeholder's place is gone")
	}
}

// placeholderLikeRead reads the directory fd to its end, as the checks
// of a holder do.
func placeholderLikeRead(fd int) {
	buf := make([]byte, 4096)
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err != nil || n == 0 {
			return
		}
	}
}
