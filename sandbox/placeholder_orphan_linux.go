//go:build linux

package sandbox

import (
	"sync"

	"github.com/codexec/codex/internal/fsat"
	"golang.org/x/sys/unix"
)

// Placeholders of a process that died holding them (docs/sandbox.md §4.3
// step 5). A server killed with SIGKILL never runs HostGuard.Release, so
// its placeholders would stay as empty read-only folders in the
// workspace. Two things remove them:
//
//   - its watchdog (package proc), a process that outlives it: the
//     PlaceholderWatch of the process is told of every placeholder a run
//     holds, gets its own references to the parent's handle and to the
//     placeholder's locked open file description, and after the server's
//     death calls RemoveOrphanedPlaceholder. Its reference keeps the
//     shared lock held until then, so that no other run takes the
//     placeholder for a leftover meanwhile;
//   - the next server, from the records the server keeps (written before
//     the run goes on), when the watchdog died too:
//     RemoveRecordedPlaceholder.
//
// Both remove a directory only when it still is the one the run made or
// shared (device and inode, below the same parent), still looks like a
// placeholder (empty, no write bits), no other run holds it, and no run
// binds it as a read-only carve-out (holdCarveOut); they remove it with
// unlinkat below the parent's handle, never by a path that a sandboxed
// command could redirect. A folder or symlink put in its place, or a
// placeholder written into, is left alone.

// PlaceholderWatch is told of the placeholders this process's runs hold.
type PlaceholderWatch interface {
	// Hold is called once a run holds the placeholder fd (locked
	// LOCK_SH) at path, of identity id, whose parent directory's handle
	// is parentfd, before the run goes on. Both fds stay open until Let
	// returned. It returns a token for Let (0: none).
	Hold(parentfd, fd int, path string, id fsat.ID) uint64
	// Let is called before the run lets the placeholder go; it returns
	// once the watch holds no reference to it any more.
	Let(token uint64)
}

var placeholderWatch struct {
	mu sync.RWMutex
	w  PlaceholderWatch
}

// WatchPlaceholders makes w the process's PlaceholderWatch (nil: none).
func WatchPlaceholders(w PlaceholderWatch) {
	placeholderWatch.mu.Lock()
	placeholderWatch.w = w
	placeholderWatch.mu.Unlock()
}

func watchHold(parentfd, fd int, path string, id fsat.ID) uint64 {
	placeholderWatch.mu.RLock()
	defer placeholderWatch.mu.RUnlock()
	if placeholderWatch.w == nil {
		return 0
	}
	return placeholderWatch.w.Hold(parentfd, fd, path, id)
}

func watchLet(token uint64) {
	if token == 0 {
		return
	}
	placeholderWatch.mu.RLock()
	w := placeholderWatch.w
	placeholderWatch.mu.RUnlock()
	if w != nil {
		w.Let(token)
	}
}

// RemoveOrphanedPlaceholder removes the placeholder whose handle fd (an
// open file description its dead holder shared with us) and identity id
// were recorded, named name below the handle parentfd, if nothing but
// the dead holder held it and it still is that empty placeholder. It
// reports whether it removed it; an error means it could not tell.
func RemoveOrphanedPlaceholder(parentfd, fd int, name string, id fsat.ID) (bool, error) {
	return removeUnheld(parentfd, fd, name, id)
}

// RemoveRecordedPlaceholder is RemoveOrphanedPlaceholder from a record:
// the parent is opened by parentPath without following any symlink and
// must still be the directory parent, the placeholder below it the
// directory id.
func RemoveRecordedPlaceholder(parentPath string, parent fsat.ID, name string, id fsat.ID) (bool, error) {
	if !isMetadataName(name) || parent.IsZero() || id.IsZero() {
		return false, nil
	}
	pfd, err := fsat.Open(unix.AT_FDCWD, parentPath, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return false, nil // gone, or reached through a symlink now
	}
	defer unix.Close(pfd)
	if got, err := fsat.Stat(pfd); err != nil || got != parent {
		return false, nil
	}
	fd, err := fsat.Open(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return false, nil
	}
	defer unix.Close(fd)
	return removeUnheld(pfd, fd, name, id)
}

// removeUnheld removes the placeholder fd (name below parentfd, identity
// id) when nobody else holds it, no run binds it as a carve-out, and it
// still is the empty placeholder id.
func removeUnheld(parentfd, fd int, name string, id fsat.ID) (bool, error) {
	if !isMetadataName(name) {
		return false, nil
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if err == unix.EWOULDBLOCK {
			return false, nil // another run holds it: theirs to remove
		}
		return false, err
	}
	if carveOutHeld(fd) {
		return false, nil
	}
	if got, err := fsat.Stat(fd); err != nil || got != id {
		return false, nil
	}
	if cur, _, err := fsat.StatAt(parentfd, name); err != nil || cur != id {
		return false, nil // removed, or replaced by a folder or a symlink
	}
	if _, err := unix.Seek(fd, 0, unix.SEEK_SET); err != nil {
		return false, err
	}
	if !placeholderLike(fd) {
		return false, nil // written into, or given write bits: not ours to remove
	}
	switch err := unix.Unlinkat(parentfd, name, unix.AT_REMOVEDIR); err {
	case nil:
		return true, nil
	case unix.ENOENT, unix.ENOTEMPTY, unix.EEXIST:
		return false, nil
	default:
		return false, err
	}
}

// Carve-out guards. A directory that looks like a placeholder but that
// nobody holds (a leftover, or the user's own empty read-only folder) is
// bound read-only by a run as a carve-out. Removing it would detach that
// bind in the run's mount namespace and unshadow the name, so such a run
// holds an OFD read lock (fcntl F_OFD_SETLK, a lock kind of its own,
// independent of the placeholders' flock) on it while it runs, and
// removers leave a directory so locked alone.

// carveOutHeld reports whether a run holds a carve-out guard on fd's
// directory (a read lock of another open file description).
func carveOutHeld(fd int) bool {
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk); err != nil {
		return true // cannot tell: keep it
	}
	return lk.Type != unix.F_UNLCK
}

// holdCarveOut guards the carve-out name below rootfd when it looks like
// a placeholder. It returns the guard's handle (-1: none needed or
// possible), or gone when the directory was removed or replaced before
// the guard took hold (the caller shadows the name instead).
func holdCarveOut(rootfd int, name string) (fd int, gone bool) {
	fd, err := fsat.Open(rootfd, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if err == unix.ENOENT {
		return -1, true
	}
	if err != nil {
		return -1, false
	}
	if !placeholderLike(fd) {
		unix.Close(fd)
		return -1, false // a real folder: nobody removes it
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK}
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk); err != nil {
		unix.Close(fd)
		return -1, false
	}
	// A remover holds LOCK_EX from before it looks for guards until the
	// directory is gone. Passing LOCK_SH once after the guard is set
	// orders us: a remover that took LOCK_EX after this saw the guard; one
	// that held it before is done, and the check below sees its work.
	for try := 0; ; try++ {
		err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err == nil {
			_ = unix.Flock(fd, unix.LOCK_UN)
			break
		}
		if err != unix.EWOULDBLOCK || try >= acquireTries {
			break
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}
	id, err1 := fsat.Stat(fd)
	cur, _, err2 := fsat.StatAt(rootfd, name)
	if err1 != nil || err2 != nil || cur != id {
		unix.Close(fd)
		return -1, true
	}
	return fd, false
}
