//go:build linux

// Removal of cgroup directories left behind by earlier servers that died
// without cleaning up.

package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// sweepStaleCgroups removes the cgroup directories of earlier servers that
// died without cleaning up (SIGKILL, a crash): "codex-exec-<pid>[-n]" under
// base whose owner is gone. Whatever still runs in them was left by that
// server, so it is killed, as that server would have done; then the leaves
// and the directory are removed, and so is the directory of the same name
// under each of mirrors (the cgroup v1 pids fallback).
//
// Ownership is proven by the flock a live server holds on its own
// directory (lockDir): the pid in the name means nothing to a server in
// another PID namespace sharing this cgroup tree. A directory is swept
// only while we hold its lock, and only if its pid is not alive in our
// namespace either (a server of an earlier version holds no lock).
// Failures are ignored (best effort).
func sweepStaleCgroups(base string, mirrors ...string) {
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
		if pid == os.Getpid() {
			_ = unix.Close(lock)
			continue
		}
		if err := unix.Kill(pid, 0); err == nil || err == unix.EPERM {
			_ = unix.Close(lock)
			continue // alive here: a server without the lock, or a reused pid
		}
		_ = writeFile(filepath.Join(dir, "cgroup.kill"), "1")
		for _, d := range append([]string{dir}, mirrorDirs(mirrors, e.Name())...) {
			leaves, _ := os.ReadDir(d)
			for _, l := range leaves {
				if l.IsDir() {
					_ = rmdirRetry(filepath.Join(d, l.Name()), 200*time.Millisecond)
				}
			}
			_ = rmdirRetry(d, 200*time.Millisecond)
		}
		_ = unix.Close(lock)
	}
}
