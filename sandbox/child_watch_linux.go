//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// protectedCreateMessage is the reference's text when a protected path
// had to be removed (sandbox.md §4.8).
const protectedCreateMessage = "sandbox blocked creation of protected workspace metadata path %s\n"

// protectWatcher is the protected-create watcher (sandbox.md §4.3 step 5):
// paths that did not exist at the start (a missing .git, .agents, .codex
// under a writable root) are removed as soon as they appear, and a run
// that created one cannot succeed. Its methods are safe for concurrent use.
type protectWatcher struct {
	paths map[string]bool // the protected paths, by absolute path
	f     *os.File        // the inotify fd, non-blocking; nil without inotify
	done  chan struct{}   // closed when the event loop has returned
	mu    sync.Mutex
	hit   bool // a protected path was created; guarded by mu
}

// watchProtected starts watching the parent directories of paths with
// inotify (IN_CREATE|IN_MOVED_TO) and removes any protected path that
// exists already. It returns nil for no paths. One goroutine reads the
// events until finish stops it.
func watchProtected(paths []string) (*protectWatcher, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	w := &protectWatcher{paths: map[string]bool{}}
	for _, p := range paths {
		w.paths[filepath.Clean(p)] = true
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		// Without inotify the final check in finish still fails the run.
		w.sweep()
		return w, nil
	}
	dirs := map[int]string{}
	for p := range w.paths {
		parent := filepath.Dir(p)
		wd, err := unix.InotifyAddWatch(fd, parent, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR)
		if err == nil {
			dirs[wd] = parent
		}
	}
	w.f = os.NewFile(uintptr(fd), "inotify") // polled: Close ends a pending Read
	w.done = make(chan struct{})
	w.sweep() // after the watches: nothing slips between check and watch
	go w.loop(dirs)
	return w, nil
}

// loop reads inotify events and removes protected names as they appear.
func (w *protectWatcher) loop(dirs map[int]string) {
	defer close(w.done)
	var buf [64 * (unix.SizeofInotifyEvent + unix.NAME_MAX + 1)]byte
	for {
		n, err := w.f.Read(buf[:])
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			name := string(nameBytes[:cstrLen(nameBytes)])
			if parent, ok := dirs[int(ev.Wd)]; ok && name != "" {
				if p := filepath.Join(parent, name); w.paths[p] {
					w.remove(p)
				}
			}
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				w.sweep()
			}
		}
	}
}

// sweep removes every protected path that exists.
func (w *protectWatcher) sweep() {
	for p := range w.paths {
		if _, err := os.Lstat(p); err == nil {
			w.remove(p)
		}
	}
}

// remove deletes the protected path p, reports it and marks the run.
func (w *protectWatcher) remove(p string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := os.Lstat(p); err != nil {
		return // already gone
	}
	_ = os.RemoveAll(p)
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
	if w.f != nil {
		w.f.Close()
		<-w.done
	}
	w.sweep()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hit && code == 0 {
		return 1
	}
	return code
}

// cstrLen is the length of the NUL-terminated name in b.
func cstrLen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}
