//go:build linux

// Per-process cgroup leaves: created before a spawn, killed as a unit,
// removed once the process is done (or swept later while busy).

package proc

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// cgroupSlot is a leaf prepared for one spawn: its path, an O_RDONLY fd
// for CLONE_INTO_CGROUP (-1 without a leaf) and the tasks file of the
// paired cgroup v1 pids leaf (nil without).
type cgroupSlot struct {
	dir       string
	fd        int
	pidsTasks *os.File
}

// closeFD closes the leaf's fds once the child was cloned into it.
func (s cgroupSlot) closeFD() {
	if s.fd >= 0 {
		_ = unix.Close(s.fd)
	}
	if s.pidsTasks != nil {
		_ = s.pidsTasks.Close()
	}
}

// prepare returns the cgroup leaf for the next spawn, and records it as a
// sandboxed process's leaf if sandboxed is set: the spare leaf made ahead
// of time when there is one, else a new leaf made now. Outside cgroup mode
// it returns an empty slot.
func (t *TreeKiller) prepare(sandboxed bool) (cgroupSlot, error) {
	if t.mode != modeCgroup {
		return cgroupSlot{fd: -1}, nil
	}
	t.sweep()
	slot, ok := t.takeSpare()
	if !ok {
		var err error
		if slot, err = t.makeLeaf(); err != nil {
			return slot, err
		}
	}
	if sandboxed {
		if err := t.noteSandboxedLeaf(slot.dir, slot.fd); err != nil {
			slot.discard(t)
			return cgroupSlot{fd: -1}, err
		}
	}
	return slot, nil
}

// makeLeaf creates a leaf with the per-process limits written into it (and
// its cgroup v1 pids twin), and opens it for CLONE_INTO_CGROUP.
func (t *TreeKiller) makeLeaf() (cgroupSlot, error) {
	slot := cgroupSlot{fd: -1}
	dir := filepath.Join(t.dir, strconv.FormatUint(t.seq.Add(1), 10))
	if err := unix.Mkdir(dir, 0o755); err != nil {
		return slot, &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	t.applyLimits(dir)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		return slot, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	_, tasks := t.prepareV1(dir)
	return cgroupSlot{dir: dir, fd: fd, pidsTasks: tasks}, nil
}

// discard removes a leaf that no process entered.
func (s cgroupSlot) discard(t *TreeKiller) {
	s.closeFD()
	_ = unix.Rmdir(s.dir)
	t.releaseV1(s.dir)
}

// join moves pid into the leaf dir, for kernels that refused
// CLONE_INTO_CGROUP. Descendants forked before the move escape the leaf.
func (t *TreeKiller) join(dir string, pid int) error {
	if dir == "" {
		return nil
	}
	return writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid))
}

// killCgroup kills every process in the cgroup dir and its descendants.
func (t *TreeKiller) killCgroup(dir string) error {
	if t.hasKill {
		err := writeFile(filepath.Join(dir, "cgroup.kill"), "1")
		if errors.Is(err, unix.ENOENT) {
			return nil // leaf already removed: nothing left to kill
		}
		return err
	}
	// Freezing stops forks; frozen tasks still die of SIGKILL in cgroup v2.
	freeze := filepath.Join(dir, "cgroup.freeze")
	if err := writeFile(freeze, "1"); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	defer func() { _ = writeFile(freeze, "0") }()
	for i := 0; i < maxWalkPasses; i++ {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			return nil
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		time.Sleep(time.Millisecond)
	}
	return errors.New("cgroup " + dir + " still populated after kill")
}

// release removes the cgroup leaf of a finished process. If it is still
// busy (a descendant outlived the process), it retries for up to
// releaseWait when wait is set, and otherwise leaves it to a later sweep.
// It reports whether the leaf is gone.
func (t *TreeKiller) release(leaf string, wait bool) bool {
	if t == nil || leaf == "" {
		return true
	}
	timeout := time.Duration(0)
	if wait {
		timeout = releaseWait
	}
	err := rmdirRetry(leaf, timeout)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil {
		delete(t.pending, leaf)
		t.forgetLeaf(leaf)
		t.releaseV1(leaf)
		return true
	}
	if err != unix.EBUSY {
		t.log.Warn("removing cgroup leaf", zap.String("dir", leaf), zap.Error(err))
	}
	t.pending[leaf] = struct{}{}
	return false
}

// sweep retries the removal of busy leaves whose descendants may be gone.
func (t *TreeKiller) sweep() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for leaf := range t.pending {
		if err := unix.Rmdir(leaf); err == nil || err == unix.ENOENT {
			delete(t.pending, leaf)
			t.forgetLeaf(leaf)
			t.releaseV1(leaf)
		}
	}
}
