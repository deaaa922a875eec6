package fshelper

import "golang.org/x/sys/unix"

// WalkDirNoFollow runs the component-walk fallback of openDirNoFollow, which
// kernels with openat2 never reach, and closes the descriptor it opens.
func WalkDirNoFollow(dir string) error {
	fd, err := walkDirNoFollow(dir)
	if err == nil {
		_ = unix.Close(fd)
	}
	return err
}

// WatchPolled reports whether w's last armed watch fell back to polling.
func WatchPolled(w *MissingWatcher) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.polled
}

// ForcePoll makes every later watch of w poll instead of using inotify.
func ForcePoll(w *MissingWatcher) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forcePoll = true
}

// SetMaxSkillDirs sets the folder bound of skill discovery; the returned
// function restores it.
func SetMaxSkillDirs(n int) func() {
	old := maxSkillDirs
	maxSkillDirs = n
	return func() { maxSkillDirs = old }
}
