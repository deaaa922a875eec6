//go:build linux

// Cgroup mode setup and teardown: the owned directory under our own

package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/mountinfo"
)

// setupCgroup creates the owned directory and checks that leaves work.
func (t *TreeKiller) setupCgroup(lim Limits) error {
	if !kernelAtLeast(5, 7) {
		return errors.New("CLONE_INTO_CGROUP needs Linux 5.7")
	}
	mnt, err := cgroup2Mount()
	if err != nil {
		return err
	}
	rel, err := selfCgroup()
	if err != nil {
		return err
	}
	base := filepath.Join(mnt, rel)
	// Moving a process between cgroups needs write access to the common
	// ancestor's cgroup.procs, which is our own cgroup.
	if err := unix.Access(filepath.Join(base, "cgroup.procs"), unix.W_OK); err != nil {
		return &os.PathError{Op: "access", Path: filepath.Join(base, "cgroup.procs"), Err: err}
	}
	var mirror string
	if mnt1, rel1, err := v1Hierarchy("pids"); err == nil {
		mirror = filepath.Join(mnt1, rel1)
	}
	sweepStaleCgroups(t.log, base, mirror)
	dir, lock, err := makeOwnedDir(base)
	if err != nil {
		return err
	}
	has := func(name string) bool { return unix.Access(filepath.Join(dir, name), unix.F_OK) == nil }
	t.hasKill = has("cgroup.kill")
	probe := filepath.Join(dir, "probe")
	err = unix.Mkdir(probe, 0o755)
	if err == nil {
		err = unix.Access(filepath.Join(probe, "cgroup.procs"), unix.W_OK)
		_ = unix.Rmdir(probe)
	}
	if err == nil && !t.hasKill && !has("cgroup.freeze") {
		err = errors.New("neither cgroup.kill nor cgroup.freeze")
	}
	if err != nil {
		_ = unix.Close(lock)
		_ = unix.Rmdir(dir)
		return fmt.Errorf("cgroup leaf in %s: %w", dir, err)
	}
	t.dir = dir
	t.lockFD = lock
	ownDirs.add(dir)
	t.pending = make(map[string]struct{})
	t.setupLimits(base, lim)
	t.watchDir()
	return nil
}

// watchDir tells the process's watchdog, if any, of the owned directory
// and its cgroup v1 mirror.
func (t *TreeKiller) watchDir() {
	w := watchdog.Load()
	if w == nil {
		return
	}
	var mirrors []string
	if t.v1 != nil {
		mirrors = append(mirrors, t.v1.dir)
	}
	fd := t.lockFD
	if fd < 0 {
		var err error
		if fd, err = unix.Open(t.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			t.log.Warn("the watchdog cannot watch the cgroup directory", zap.String("dir", t.dir), zap.Error(err))
			return
		}
		defer unix.Close(fd)
	}
	w.watchCgroup(fd, t.dir, mirrors)
}

// dirNames counts the names makeOwnedDir tried in this process.
var dirNames atomic.Int64

// makeOwnedDir creates base/codex-exec-<pid>[-n] and locks it (the proof
// of ownership sweepStaleCgroups honours). Another server's sweep may take
// the directory between our mkdir and our lock; then it is gone or no
// longer the inode we locked, and the next name is tried.
func makeOwnedDir(base string) (string, int, error) {
	for range 10 {
		dir := filepath.Join(base, "codex-exec-"+strconv.Itoa(os.Getpid()))
		if i := dirNames.Add(1) - 1; i > 0 {
			// A name this process has not used before: a stale directory
			// of a dead server with our pid, or an earlier TreeKiller of
			// ours (tests make many), whose late kill by path must not
			// find a leaf of this one.
			dir += "-" + strconv.Itoa(int(i))
		}
		if err := unix.Mkdir(dir, 0o755); err != nil {
			if err == unix.EEXIST {
				continue
			}
			return "", -1, &os.PathError{Op: "mkdir", Path: dir, Err: err}
		}
		lock, err := lockDir(dir)
		if err == unix.ENOENT || err == unix.EWOULDBLOCK {
			continue // swept, or being swept, by another server
		}
		if err != nil {
			return dir, -1, nil // no flock here: run unproven rather than not at all
		}
		var held, now unix.Stat_t
		if unix.Fstat(lock, &held) == nil && unix.Stat(dir, &now) == nil && held.Ino == now.Ino {
			return dir, lock, nil
		}
		_ = unix.Close(lock)
	}
	return "", -1, fmt.Errorf("no cgroup directory of our own under %s", base)
}

func mirrorDirs(mirrors []string, name string) []string {
	var out []string
	for _, m := range mirrors {
		if m != "" {
			out = append(out, filepath.Join(m, name))
		}
	}
	return out
}

// lockDir opens dir and takes an exclusive flock on it without waiting; a
// lock held by a live server fails with EWOULDBLOCK. The kernel drops the
// lock when its holder dies, whatever the PID namespace. The returned fd
// (close-on-exec) holds the lock until closed.
func lockDir(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// closeCgroup kills everything under the owned directory and removes it.
func (t *TreeKiller) closeCgroup() error {
	var errs []error
	if t.hasKill {
		if err := t.killCgroup(t.dir); err != nil {
			errs = append(errs, err)
		}
	}
	entries, err := os.ReadDir(t.dir)
	if err != nil {
		errs = append(errs, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		leaf := filepath.Join(t.dir, e.Name())
		if !t.hasKill {
			if err := t.killCgroup(leaf); err != nil {
				errs = append(errs, err)
			}
		}
		if err := rmdirRetry(leaf, releaseWait); err != nil {
			errs = append(errs, &os.PathError{Op: "rmdir", Path: leaf, Err: err})
		}
	}
	if err := rmdirRetry(t.dir, releaseWait); err != nil {
		errs = append(errs, &os.PathError{Op: "rmdir", Path: t.dir, Err: err})
	}
	if err := t.closeV1(); err != nil {
		errs = append(errs, err)
	}
	if t.lockFD >= 0 {
		_ = unix.Close(t.lockFD)
	}
	ownDirs.remove(t.dir)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("proc: close tree killer: %w", err)
	}
	return nil
}

// rmdirRetry removes dir, retrying EBUSY with backoff for up to timeout
// (killed tasks leave the cgroup asynchronously). ENOENT counts as success.
func rmdirRetry(dir string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	delay := time.Millisecond
	for {
		err := rmdirOne(dir)
		if err == nil || err == unix.ENOENT {
			return nil
		}
		if err != unix.EBUSY || time.Now().After(deadline) {
			return err
		}
		// A cgroup with child cgroups stays EBUSY however long one waits:
		// remove those (a sub-cgroup made inside a leaf, one that a dead
		// server left behind) before the next try. Only after a first
		// EBUSY: the usual leaf has none, and its removal is on the path
		// of every process/closed.
		removeChildCgroups(dir, 0)
		if unix.Rmdir(dir) == nil {
			return nil
		}
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// removeChildCgroups removes the (empty) cgroups below dir, deepest
// first, once each; a populated one stays and its parent with it.
func removeChildCgroups(dir string, depth int) {
	if depth > 64 {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			sub := filepath.Join(dir, e.Name())
			removeChildCgroups(sub, depth+1)
			_ = unix.Rmdir(sub)
		}
	}
}

// writeFile writes s to an existing file (cgroupfs files cannot be created
// or truncated).
func writeFile(path, s string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(s)); err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// cgroup2Mount returns the mount point of the cgroup v2 hierarchy.
func cgroup2Mount() (string, error) { return mountinfo.Cgroup2Mount() }

// selfCgroup returns our cgroup v2 path from the "0::" line of
// /proc/self/cgroup.
func selfCgroup() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			if strings.HasSuffix(rel, " (deleted)") {
				return "", errors.New("our cgroup was deleted")
			}
			return rel, nil
		}
	}
	return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
}

// kernelAtLeast reports whether the running kernel is at least major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	rel := unix.ByteSliceToString(u.Release[:])
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, _ := strconv.Atoi(parts[0])
	mi, _ := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return ma > major || ma == major && mi >= minor
}

// rmdirMu lets one thread at a time remove a cgroup directory. The kernel
// serialises the removals on its cgroup mutex anyway; many at once (a
// terminate-all) would each block an OS thread in the kernel, and the
// runtime would hand their Ps to new threads meanwhile. Waiting here parks
// goroutines instead.
var rmdirMu sync.Mutex

// rmdirOne is unix.Rmdir under rmdirMu.
func rmdirOne(dir string) error {
	rmdirMu.Lock()
	defer rmdirMu.Unlock()
	return unix.Rmdir(dir)
}
