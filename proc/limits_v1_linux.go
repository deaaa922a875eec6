//go:build linux

package proc

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
}

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
	t.v1 = &pidsV1{dir: dir, home: tasks, max: strconv.FormatInt(max, 10)}
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

// prepareV1 makes the v1 leaf paired with the v2 leaf and returns its
// path and its open tasks file, or "" and nil without the fallback (or on
// failure, logged once).
func (t *TreeKiller) prepareV1(leaf string) (string, *os.File) {
	if t.v1 == nil {
		return "", nil
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
	return dir, tasks
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

// releaseV1 removes the v1 leaf paired with a removed v2 leaf.
func (t *TreeKiller) releaseV1(leaf string) {
	if t.v1 == nil || leaf == "" {
		return
	}
	_ = rmdirRetry(filepath.Join(t.v1.dir, filepath.Base(leaf)), 100*time.Millisecond)
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
