//go:build linux

package proc

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/mountinfo"
)

// On hybrid hosts the pids controller is bound to a cgroup v1 hierarchy,
// so cgroup v2 leaves cannot carry pids.max. Then every process also gets
// a v1 pids leaf of the same name under pidsV1.dir. CLONE_INTO_CGROUP
// does not exist in v1, and moving the child after the fork would let it
// fork first; instead the forking thread (locked to its goroutine) moves
// itself into the v1 leaf, forks, and moves back: v1 membership is per
// thread and the child inherits it, so the command never runs outside.
// The tasks files of both moves are opened ahead (the leaf's when the leaf
// is made), so a spawn pays for two writes only.
type pidsV1 struct {
	dir  string   // <mount><our v1 pids cgroup>/<name of the v2 directory>
	home *os.File // tasks of our own v1 pids cgroup, where the thread returns
	max  string   // pids.max of each leaf

	mu   sync.Mutex
	twin map[string]string // guarded by mu: each v2 leaf's v1 leaf, while paired
	free []string          // guarded by mu: emptied v1 leaves kept for reuse, at most pidsV1Keep
}

// pidsV1Keep bounds the emptied v1 pids leaves kept for reuse. A v1 leaf
// costs a mkdir, a pids.max write and, when its process ends, an rmdir that
// serialises on the kernel's cgroup lock; a kept one costs a few KiB of
// kernel memory until the next spawn takes it (or TreeKiller.Close removes
// it). The v2 leaves are never reused: their ids name the sandboxed
// processes to the peer check.
const pidsV1Keep = 256

// setupPidsV1 prepares the v1 fallback for pids.max; failures are logged
// and leave it off.
func (t *TreeKiller) setupPidsV1(max int64) {
	mnt, rel, err := v1Hierarchy("pids")
	if err != nil {
		t.log.Debug("per-process pids limit unavailable", zap.Error(err))
		return
	}
	home := filepath.Join(mnt, rel)
	dir := filepath.Join(home, filepath.Base(t.dir))
	if err := unix.Mkdir(dir, 0o755); err != nil && err != unix.EEXIST {
		t.log.Debug("per-process pids limit unavailable", zap.Error(&os.PathError{Op: "mkdir", Path: dir, Err: err}))
		return
	}
	tasks, err := openTasks(home)
	if err != nil {
		_ = unix.Rmdir(dir)
		t.log.Debug("per-process pids limit unavailable", zap.Error(err))
		return
	}
	t.v1 = &pidsV1{dir: dir, home: tasks, max: strconv.FormatInt(max, 10), twin: map[string]string{}}
	t.log.Debug("per-process pids limit through cgroup v1", zap.String("dir", dir))
}

// v1Hierarchy finds the mount of the v1 hierarchy with controller ctrl and
// our cgroup in it.
func v1Hierarchy(ctrl string) (mnt, rel string, err error) {
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 4 && fields[2] == "cgroup" && hasOption(fields[3], ctrl) {
			mnt = mountinfo.Unescape(fields[1])
			break
		}
	}
	if mnt == "" {
		return "", "", errors.New("no cgroup v1 hierarchy with the " + ctrl + " controller")
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && hasOption(parts[1], ctrl) {
			return mnt, parts[2], nil
		}
	}
	return "", "", errors.New("no " + ctrl + " line in /proc/self/cgroup")
}

func hasOption(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// prepareV1 returns the v1 leaf paired with the v2 leaf and its open tasks
// file: a kept empty one (pids.max written again) or a new one. Without the
// fallback (or on failure, logged once) it returns "" and nil.
func (t *TreeKiller) prepareV1(leaf string) (string, *os.File) {
	if t.v1 == nil {
		return "", nil
	}
	if dir, tasks := t.v1.reuse(); tasks != nil {
		t.v1.pair(leaf, dir)
		return dir, tasks
	}
	dir := filepath.Join(t.v1.dir, filepath.Base(leaf))
	err := unix.Mkdir(dir, 0o755)
	if err == unix.EEXIST {
		err = nil // left by a dead server of the same name: ours now
	}
	var tasks *os.File
	if err == nil {
		err = writeFile(filepath.Join(dir, "pids.max"), t.v1.max)
		if err == nil {
			tasks, err = openTasks(dir)
		}
		if err != nil {
			_ = unix.Rmdir(dir)
		}
	}
	if err != nil {
		t.limitWarn.Do(func() {
			t.log.Warn("cannot set a per-process limit; continuing without it", zap.String("dir", dir), zap.Error(err))
		})
		return "", nil
	}
	t.v1.pair(leaf, dir)
	return dir, tasks
}

// pair records dir as the v1 leaf of the v2 leaf.
func (v *pidsV1) pair(leaf, dir string) {
	v.mu.Lock()
	v.twin[leaf] = dir
	v.mu.Unlock()
}

// reuse takes a kept v1 leaf, writes its pids.max again (whatever a
// process of the last tenant wrote there does not carry over) and opens its
// tasks file, which must list no task. It returns nil when none is kept. A
// kept leaf that fails or holds a task is removed (or, still busy, left to
// closeV1) and the next one tried. The checks are made here, on the way to
// a spawn, rather than at the end of the last tenant; and through the tasks
// file the spawn opens anyway, rather than pids.current, whose open costs
// about what the mkdir it saves does. A zombie not yet released by its
// reaper is not listed there: it keeps one pid of the new tenant's budget
// until it is.
func (v *pidsV1) reuse() (string, *os.File) {
	for {
		v.mu.Lock()
		n := len(v.free)
		if n == 0 {
			v.mu.Unlock()
			return "", nil
		}
		dir := v.free[n-1]
		v.free = v.free[:n-1]
		v.mu.Unlock()
		if writeFile(filepath.Join(dir, "pids.max"), v.max) == nil {
			if tasks, err := openEmptyTasks(dir); err == nil {
				return dir, tasks
			}
		}
		_ = unix.Rmdir(dir)
	}
}

// openEmptyTasks opens the tasks file of the v1 cgroup dir for reading and
// writing, and fails unless it lists no task.
func openEmptyTasks(dir string) (*os.File, error) {
	path := filepath.Join(dir, "tasks")
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var b [16]byte
	n, err := unix.Read(fd, b[:])
	if err != nil || n != 0 {
		_ = unix.Close(fd)
		if err == nil {
			err = unix.EBUSY
		}
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// keep puts the v1 leaf dir, whose v2 twin was removed, among the leaves
// kept for reuse if there is room. It reports whether dir was kept.
func (v *pidsV1) keep(dir string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.free) >= pidsV1Keep {
		return false
	}
	v.free = append(v.free, dir)
	return true
}

// openTasks opens the tasks file of the v1 cgroup dir for writing, as a
// plain blocking file outside the netpoller (cgroup files never block).
func openTasks(dir string) (*os.File, error) {
	path := filepath.Join(dir, "tasks")
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// releaseV1 releases the v1 leaf paired with a removed v2 leaf: kept for
// the next spawn while there is room (reuse checks that it is empty), else
// removed.
func (t *TreeKiller) releaseV1(leaf string) {
	if t.v1 == nil || leaf == "" {
		return
	}
	t.v1.mu.Lock()
	dir, ok := t.v1.twin[leaf]
	delete(t.v1.twin, leaf)
	t.v1.mu.Unlock()
	if !ok || t.v1.keep(dir) {
		return
	}
	_ = rmdirRetry(dir, 100*time.Millisecond)
}

// v1Twin returns the v1 leaf paired with the v2 leaf, or "".
func (t *TreeKiller) v1Twin(leaf string) string {
	if t.v1 == nil {
		return ""
	}
	t.v1.mu.Lock()
	defer t.v1.mu.Unlock()
	return t.v1.twin[leaf]
}

// closeV1 removes the v1 directory (after every leaf was released).
func (t *TreeKiller) closeV1() error {
	if t.v1 == nil {
		return nil
	}
	entries, _ := os.ReadDir(t.v1.dir)
	for _, e := range entries {
		if e.IsDir() {
			_ = rmdirRetry(filepath.Join(t.v1.dir, e.Name()), releaseWait)
		}
	}
	t.v1.mu.Lock()
	t.v1.free = nil
	t.v1.mu.Unlock()
	_ = t.v1.home.Close()
	if err := rmdirRetry(t.v1.dir, releaseWait); err != nil {
		return &os.PathError{Op: "rmdir", Path: t.v1.dir, Err: err}
	}
	return nil
}

// selfTask, written to a v1 tasks file, moves the writing thread. Unlike
// its tid, it lets the kernel skip the system-wide threadgroup lock that a
// move of another task takes: a write lock that waits for an RCU grace
// period and holds up every fork on the host meanwhile.
const selfTask = "0"

// forkInV1 runs fork (the caller's OS thread is locked) with the thread in
// the v1 leaf whose tasks file is given. It reports whether the thread is
// back home; if not, the caller must keep the thread locked so that it dies
// with its goroutine.
func (t *TreeKiller) forkInV1(tasks *os.File, fork func()) (home bool) {
	if t == nil || tasks == nil {
		fork()
		return true
	}
	if _, err := tasks.WriteString(selfTask); err != nil {
		t.limitWarn.Do(func() {
			t.log.Warn("cannot enter the pids leaf; continuing without the limit", zap.Error(err))
		})
		fork()
		return true
	}
	fork()
	if _, err := t.v1.home.WriteString(selfTask); err != nil {
		t.log.Error("forking thread stuck in a pids leaf; retiring it", zap.Error(err))
		return false
	}
	return true
}
