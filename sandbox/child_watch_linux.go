//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/codexec/codex/internal/fsat"
	"golang.org/x/sys/unix"
)

// protectedCreateMessage is the reference's text when a protected path
// had to be removed (sandbox.md §4.8).
const protectedCreateMessage = "sandbox blocked creation of protected workspace metadata path %s\n"

// protectPoll is how often the watcher looks for protected paths.
const protectPoll = 5 * time.Millisecond

// protectWatcher is the protected-create watcher (sandbox.md §4.3 step 5):
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
}

// watched is one protected name: a handle on its parent and its name.
type watched struct {
	parentfd int
	name     string
}

// watchProtected removes any protected path that exists already and starts
// polling for new ones. It returns nil for no paths. One goroutine polls
// until finish stops it. A parent that cannot be opened without crossing a
// symlink is an error: the plan cannot be enforced.
func watchProtected(paths []string) (*protectWatcher, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	w := &protectWatcher{paths: map[string]watched{}, stop: make(chan struct{}), done: make(chan struct{})}
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
		w.paths[p] = watched{parentfd: fd, name: filepath.Base(p)}
	}
	w.sweep()
	go w.loop()
	return w, nil
}

// closeAll closes the parent handles.
func (w *protectWatcher) closeAll() {
	for _, x := range w.paths {
		unix.Close(x.parentfd)
	}
}

// loop sweeps every protectPoll until stopped.
func (w *protectWatcher) loop() {
	defer close(w.done)
	t := time.NewTicker(protectPoll)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			w.sweep()
		case <-w.stop:
			return
		}
	}
}

// sweep removes every protected path that exists.
func (w *protectWatcher) sweep() {
	for p, x := range w.paths {
		if _, _, err := fsat.StatAt(x.parentfd, x.name); err == nil {
			w.remove(p, x)
		}
	}
}

// remove deletes the protected path p, reports it and marks the run.
func (w *protectWatcher) remove(p string, x watched) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, _, err := fsat.StatAt(x.parentfd, x.name); err != nil {
		return // already gone
	}
	_ = fsat.RemoveAllAt(x.parentfd, x.name)
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
	<-w.done
	w.sweep()
	w.closeAll()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hit && code == 0 {
		return 1
	}
	return code
}
