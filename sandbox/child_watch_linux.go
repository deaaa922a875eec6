//go:build linux

package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/codexec/codex/internal/fsat"
	"golang.org/x/sys/unix"
)

// protectedCreateMessage is the reference's text when a protected path
// had to be removed (docs/sandbox.md §4.8).
const protectedCreateMessage = "sandbox blocked creation of protected workspace metadata path %s\n"

// protectPoll is how often the watcher looks for protected paths.
const protectPoll = 5 * time.Millisecond

// protectWatcher is the protected-create watcher (docs/sandbox.md §4.3 step 5):
// paths that did not exist at the start (a missing .git, .agents, .codex
// under a writable root) are removed as soon as they appear, and a run
// that created one cannot succeed. Its methods are safe for concurrent use.
//
// It is the fallback where a placeholder cannot be mounted, and the
// protection of names that must stay unmasked (a missing .git inside a
// parent repository). It never follows a path: each protected name is
// watched and removed relative to a handle on its parent directory, opened
// at the start without following symlinks.
//
// It polls with fstatat instead of using inotify: closing an inotify fd waits
// for an SRCU grace period in the kernel (10-20 ms here), and that wait
// would sit between the command's exit and the helper's, on every
// sandboxed run. A few lstat calls every 5 ms cost nothing by comparison;
// the final sweep in finish, and the server's sweep after the run, close
// the remaining window.
type protectWatcher struct {
	paths map[string]watched // the protected paths, by absolute path
	stop  chan struct{}      // closed by finish
	done  chan struct{}      // closed when the poll loop has returned
	mu    sync.Mutex
	hit   bool // a protected path was created; guarded by mu
	// spareHeld leaves alone an empty directory without write bits that
	// someone holds a lock on: another run's placeholder, made after this
	// one started (removing it would detach that run's mount). Only for an
	// fs helper's plan: the fs operation (our code) takes no locks, so it
	// cannot keep a name it creates this way. A command could, so a
	// command's watcher never spares what it finds by locks.
	spareHeld bool
}

// watched is one protected name: a handle on its parent and its name,
// and for a placeholder the helper could not mount on, the identity of the
// placeholder directory the host holds for this run (else zero).
type watched struct {
	parentfd int
	name     string
	keep     fsat.ID
}

// watchProtected removes any protected path that exists already and starts
// polling for new ones (openProtected, then start). It returns nil for no
// paths.
func watchProtected(paths []string, keep map[string]fsat.ID, spareHeld bool) (*protectWatcher, error) {
	w, err := openProtected(paths, keep, spareHeld)
	if err != nil {
		return nil, err
	}
	if err := w.start(); err != nil {
		return nil, err
	}
	return w, nil
}

// openProtected opens the parents of the protected paths; start starts
// the watcher. It returns nil for no paths. A parent that cannot be
// opened without crossing a symlink is an error: the plan cannot be
// enforced.
//
// keep maps the placeholders among paths to the identity the host
// recorded in the plan for them (a placeholder the helper could not mount
// on). That directory is shared with other runs, whose mounts on it a
// removal would detach, so the watcher empties it instead of removing it.
// The command cannot forge this: the plan was written before it started,
// and the host holds the directory open and locked for the whole run, so
// its inode cannot be reused; a directory the command made there has
// another identity and is removed. spareHeld is protectWatcher.spareHeld.
func openProtected(paths []string, keep map[string]fsat.ID, spareHeld bool) (*protectWatcher, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	w := &protectWatcher{paths: map[string]watched{}, stop: make(chan struct{}), done: make(chan struct{}), spareHeld: spareHeld}
	for _, p := range paths {
		p = filepath.Clean(p)
		if _, ok := w.paths[p]; ok {
			continue
		}
		fd, err := fsat.Open(unix.AT_FDCWD, filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			w.closeAll()
			return nil, fmt.Errorf("cannot watch protected path %s: %w", p, err)
		}
		w.paths[p] = watched{parentfd: fd, name: filepath.Base(p), keep: keep[p]}
	}
	return w, nil
}

// start sweeps once, removing any protected path that exists already, and
// starts polling; it returns once the first sweep is done. Every sweep runs
// on one thread without capabilities (lowerThreadCapabilities): the
// helper's other threads keep theirs (only the thread the command is
// forked from drops them), and a sweep with them would remove, for the
// command, what it could not remove itself (another user's files it
// renamed to a protected name). In the helper, start runs after the
// capabilities, Landlock and seccomp were applied to the process, so that
// no later change to every thread finds this one different. A nil watcher
// does nothing.
func (w *protectWatcher) start() error {
	if w == nil {
		return nil
	}
	ready := make(chan error, 1)
	go w.loop(ready)
	if err := <-ready; err != nil {
		w.closeAll()
		return fmt.Errorf("cannot watch protected paths: %w", err)
	}
	return nil
}

// closeAll closes the parent handles.
func (w *protectWatcher) closeAll() {
	for _, x := range w.paths {
		unix.Close(x.parentfd)
	}
}

// loop runs the sweeps on its own locked thread without effective
// capabilities (lowerThreadCapabilities): the first (then it reports on
// ready), one every protectPoll, and the final one once stopped. The
// thread gets them back when the loop ends.
func (w *protectWatcher) loop(ready chan<- error) {
	defer close(w.done)
	runtime.LockOSThread()
	restore, err := lowerThreadCapabilities()
	if err != nil {
		runtime.UnlockOSThread()
		ready <- err
		return
	}
	defer func() {
		if restore() == nil {
			runtime.UnlockOSThread()
		}
	}()
	w.sweep()
	ready <- nil
	t := time.NewTicker(protectPoll)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			w.sweep()
		case <-w.stop:
			w.sweep() // the final check, once the command is gone
			return
		}
	}
}

// sweep removes every protected path that exists, and empties a kept
// placeholder.
func (w *protectWatcher) sweep() {
	for p, x := range w.paths {
		id, _, err := fsat.StatAt(x.parentfd, x.name)
		if err == unix.EACCES && restoreOwnerAccess(x.parentfd) {
			id, _, err = fsat.StatAt(x.parentfd, x.name)
		}
		switch {
		case err != nil:
		case !x.keep.IsZero() && id == x.keep:
			w.empty(p, x)
		case w.spareHeld && placeholderState(x.parentfd, x.name) == phHeld:
		default:
			w.remove(p, x)
		}
	}
}

// empty removes what the command put into the kept placeholder p, reports
// it and marks the run; write bits given to the placeholder are taken
// back.
func (w *protectWatcher) empty(p string, x watched) {
	fd, err := fsat.Open(x.parentfd, x.name, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return // gone meanwhile: the next sweep sees what is there
	}
	defer unix.Close(fd)
	if id, err := fsat.Stat(fd); err != nil || id != x.keep {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && st.Mode&0o222 != 0 {
		_ = unix.Fchmod(fd, 0o555)
	}
	names, err := dirNames(fd)
	if err != nil || len(names) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Without capabilities, removing needs the owner's write bit (the
	// host made the placeholder, so the owner is ours): given for the
	// removal, taken back after.
	_ = unix.Fchmod(fd, 0o755)
	for _, n := range names {
		_ = fsat.RemoveAllAt(fd, n)
	}
	_ = unix.Fchmod(fd, 0o555)
	fmt.Fprintf(os.Stderr, protectedCreateMessage, p)
	w.hit = true
}

// dirNames lists the directory fd (from its offset), without . and ..
func dirNames(fd int) ([]string, error) {
	var names []string
	buf := make([]byte, 4096)
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// remove deletes the protected path p, reports it and marks the run.
func (w *protectWatcher) remove(p string, x watched) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, _, err := fsat.StatAt(x.parentfd, x.name); err != nil {
		return // already gone
	}
	_, _ = removeProtected(x.parentfd, x.name)
	fmt.Fprintf(os.Stderr, protectedCreateMessage, p)
	w.hit = true
}

// finish stops the watcher, runs the final check once the command is gone
// and returns the helper's exit status: code, or 1 instead of 0 if a
// protected path was created. A nil watcher returns code. Call it once.
func (w *protectWatcher) finish(code int) int {
	if w == nil {
		return code
	}
	close(w.stop)
	<-w.done // after the final sweep
	w.closeAll()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hit && code == 0 {
		return 1
	}
	return code
}

// keptPlaceholders returns the identities the host recorded for the
// plan's placeholders (the directories it holds for the run).
func (p *Plan) keptPlaceholders() map[string]fsat.ID {
	keep := map[string]fsat.ID{}
	for _, ph := range p.Placeholders {
		if id, ok := p.Identities[ph]; ok {
			keep[ph] = id
		}
	}
	return keep
}

// removeProtected removes name below parentfd, a protected name that a
// sandboxed run created, without following anything (fsat.RemoveAllAt).
// Its callers hold no capability, so what the command could not remove
// either stays: another user's files, or a folder it made read-only. The
// leftover is then moved aside (moveAside), so that the protected name is
// free either way. It returns that name, "" when all was removed.
func removeProtected(parentfd int, name string) (aside string, err error) {
	rerr := fsat.RemoveAllAt(parentfd, name)
	if _, _, serr := fsat.StatAt(parentfd, name); serr == unix.ENOENT {
		return "", nil
	}
	aside, err = moveAside(parentfd, name)
	if err != nil {
		return "", errors.Join(rerr, err)
	}
	return aside, nil
}

// restoreOwnerAccess gives the owner of the folder parentfd (an O_PATH
// handle) its write and search permission back, and reports whether the
// mode changed. A sweep without capabilities sees what the command sees:
// a command that owns a root can make a protected name there and then
// take its own permissions on the root away (chmod 000), and the name's
// fstatat fails with EACCES as for the command, which may put them back
// when it likes. The sweeps act as the same owner, so they may change the
// mode too.
func restoreOwnerAccess(parentfd int) bool {
	var st unix.Stat_t
	if unix.Fstat(parentfd, &st) != nil || st.Mode&0o300 == 0o300 {
		return false
	}
	// chmod follows the magic link to the folder (fchmod refuses an
	// O_PATH handle).
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(parentfd), st.Mode&0o7777|0o300) == nil
}

// moveAside renames name below parentfd, in the same folder, to name +
// ".codex-removed-" + 8 random hex digits (never over an existing name),
// and returns that name; "" when name is gone.
func moveAside(parentfd int, name string) (aside string, err error) {
	for try := 0; try < 8; try++ {
		var b [4]byte
		_, _ = rand.Read(b[:])
		aside = name + ".codex-removed-" + hex.EncodeToString(b[:])
		err := unix.Renameat2(parentfd, name, parentfd, aside, unix.RENAME_NOREPLACE)
		if err == unix.EACCES && restoreOwnerAccess(parentfd) {
			err = unix.Renameat2(parentfd, name, parentfd, aside, unix.RENAME_NOREPLACE)
		}
		switch {
		case err == nil:
			return aside, nil
		case err == unix.ENOENT:
			return "", nil
		case err != unix.EEXIST:
			return "", os.NewSyscallError("renameat2 "+name, err)
		}
	}
	return "", fmt.Errorf("renameat2 %s: no free name to move it aside to", name)
}
