//go:build linux

// Removal of cgroup directories left behind by earlier servers that died
// without cleaning up, and the handle-relative cgroupfs helpers that this
// and the watchdog share.

package proc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/fsat"
)

// sweepStaleCgroups removes the cgroup directories of earlier servers that
// died without cleaning up (SIGKILL, a crash) and whose watchdog could not
// either: "codex-exec-<pid>[-n]" under base whose owner is gone. Whatever
// still runs in them was left by that server, so it is killed, as that
// server would have done; then the leaves and the directory are removed,
// and so is the directory of the same name under each of mirrors (the
// cgroup v1 pids fallback). What it found and killed is logged at info.
//
// Ownership is proven by the flock a live server (and its watchdog, with
// the same open file description) holds on its own directory (lockDir):
// the pid in the name means nothing to a server in another PID namespace
// sharing this cgroup tree. A directory is swept only while we hold its
// lock, and only if its pid is not alive in our namespace either (a
// server of an earlier version holds no lock) or is ours (a dead server's
// pid given to us; our own directories are never swept). Failures are
// ignored (best effort).
func sweepStaleCgroups(log *zap.Logger, base string, mirrors ...string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "codex-exec-")
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil {
			continue
		}
		dir := filepath.Join(base, e.Name())
		lock, err := lockDir(dir)
		if err != nil {
			continue // its server is alive, maybe in another PID namespace
		}
		if ownDirs.has(dir) {
			_ = unix.Close(lock)
			continue // a TreeKiller of ours that runs unproven (no flock)
		}
		// Our own pid names a dead server whose pid we were given (a
		// container started again in the same cgroup): no live server of
		// this namespace has it, and no directory we own is swept.
		if pid != os.Getpid() {
			if err := unix.Kill(pid, 0); err == nil || err == unix.EPERM {
				_ = unix.Close(lock)
				continue // alive here: a server without the lock, or a reused pid
			}
		}
		pids, leaves := killOwnedCgroup(lock, dir, mirrorDirs(mirrors, e.Name()))
		_ = unix.Close(lock)
		log.Info("swept the cgroup directory of a dead server", zap.String("dir", dir),
			zap.Int("processes_killed", len(pids)), zap.Ints("pids", pids), zap.Strings("leaves", leaves))
	}
}

// ownDirs holds the directories the TreeKillers of this process own, from
// makeOwnedDir until closeCgroup.
var ownDirs dirSet

type dirSet struct {
	mu   sync.Mutex
	dirs map[string]struct{}
}

func (d *dirSet) add(dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dirs == nil {
		d.dirs = make(map[string]struct{})
	}
	d.dirs[dir] = struct{}{}
}

func (d *dirSet) remove(dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.dirs, dir)
}

func (d *dirSet) has(dir string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.dirs[dir]
	return ok
}

// removeOwnedDir removes the cgroups below dir and each of mirrors, then
// the directories themselves, each retried while it is busy (killed
// tasks leave asynchronously) for up to 200 ms.
func removeOwnedDir(dir string, mirrors []string) {
	for _, d := range append([]string{dir}, mirrors...) {
		leaves, _ := os.ReadDir(d)
		for _, l := range leaves {
			if l.IsDir() {
				_ = rmdirRetry(filepath.Join(d, l.Name()), 200*time.Millisecond)
			}
		}
		_ = rmdirRetry(d, 200*time.Millisecond)
	}
}

// readAt reads the cgroupfs file rel below the handle dirfd.
func readAt(dirfd int, rel string) ([]byte, error) {
	fd, err := fsat.Open(dirfd, rel, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(f)
	return b.Bytes(), err
}

// writeAt writes s to the existing cgroupfs file rel below dirfd.
func writeAt(dirfd int, rel, s string) error {
	fd, err := fsat.Open(dirfd, rel, unix.O_WRONLY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(s))
	return err
}

// dirEntries lists the subdirectories of the directory fd.
func dirEntries(fd int) ([]string, error) {
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err != nil {
			return names, err
		}
		if n == 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	dirs := names[:0]
	for _, n := range names {
		if _, isDir, err := fsat.StatAt(fd, n); err == nil && isDir {
			dirs = append(dirs, n)
		}
	}
	return dirs, nil
}

// splitFields splits a cgroupfs list (one pid per line).
func splitFields(data []byte) []string { return strings.Fields(string(data)) }
