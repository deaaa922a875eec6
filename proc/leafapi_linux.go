//go:build linux

// Leaves for processes that another package forks itself (the MCP shell
// tool's calls): the same leaves, limits and kill as a Process gets, handed
// out as a Leaf that the caller forks into and releases when its work ends.

package proc

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"

	"go.uber.org/zap"
)

// ErrLeafReleased is Leaf.Fork's error once the leaf was released: nothing
// is started.
var ErrLeafReleased = errors.New("proc: cgroup leaf released")

// NewCgroupTreeKiller is NewLimitedTreeKiller without the subreaper
// fallback: where cgroup mode is unavailable it fails, saying why. A
// server whose children are forked and reaped by other code than Start
// uses it (the subreaper's reaper would reap those children), with
// NewLeaf for each unit of work.
func NewCgroupTreeKiller(logger *zap.Logger, lim Limits) (*TreeKiller, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	t := &TreeKiller{log: logger}
	if err := t.setupCgroup(lim); err != nil {
		return nil, fmt.Errorf("proc: no cgroup v2 leaves: %w", err)
	}
	t.mode = modeCgroup
	logger.Debug("tree killer: cgroup mode", zap.String("dir", t.dir))
	return t, nil
}

// Leaf is a cgroup leaf, limits written, for the processes of one unit of
// work that the caller forks itself: Fork starts a process inside it, Kill
// kills everything in it, Release kills it and removes it. Everything a
// process in it forks stays in it, whatever its session or process group.
// A nil *Leaf is valid and does nothing (Fork just forks). Safe for
// concurrent use.
type Leaf struct {
	t      *TreeKiller
	slot   cgroupSlot // its fds stay open until Release
	refill sync.Once  // the spare leaf is made again after the first fork

	mu     sync.RWMutex // held for reading across a fork, for writing by Release
	closed bool         // guarded by mu
}

// NewLeaf returns a fresh leaf: the spare one made ahead of time when it is
// ready, else one made now. It fails outside cgroup mode.
func (t *TreeKiller) NewLeaf() (*Leaf, error) {
	if t == nil || t.mode != modeCgroup {
		return nil, errors.New("proc: cgroup leaves need cgroup mode")
	}
	slot, err := t.prepare(false)
	if err != nil {
		return nil, err
	}
	return &Leaf{t: t, slot: slot}, nil
}

// Dir is the leaf's cgroup v2 directory ("" for a nil Leaf).
func (l *Leaf) Dir() string {
	if l == nil {
		return ""
	}
	return l.slot.dir
}

// Fork calls fork so that the process it starts begins inside the leaf.
// sys must be the SysProcAttr fork forks with: Fork sets its cgroup fields
// (CLONE_INTO_CGROUP), and on hybrid hosts calls fork with the calling OS
// thread inside the leaf's cgroup v1 pids twin (the thread is locked to the
// goroutine meanwhile; see forkInV1). Where the kernel refuses
// CLONE_INTO_CGROUP, fork is called a second time without it and the child
// is moved into the leaf once started (what it forked before the move
// escapes, as for Start). After Release, Fork fails with ErrLeafReleased
// and fork is not called.
func (l *Leaf) Fork(sys *syscall.SysProcAttr, fork func() (int, error)) (int, error) {
	if l == nil {
		return fork()
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, ErrLeafReleased
	}
	sys.UseCgroupFD, sys.CgroupFD = true, l.slot.fd
	pid, err := l.forkIn(fork)
	if err != nil && cloneIntoCgroupFailed(err) {
		l.t.log.Warn("CLONE_INTO_CGROUP failed; starting outside the cgroup", zap.Error(err))
		sys.UseCgroupFD, sys.CgroupFD = false, 0
		if pid, err = l.forkIn(fork); err == nil {
			if jerr := l.t.join(l.slot.dir, pid); jerr != nil {
				l.t.log.Warn("moving into cgroup leaf", zap.Error(jerr))
			}
		}
	}
	if err == nil {
		l.refill.Do(l.t.refillSpare) // the next leaf, made while this one works
	}
	return pid, err
}

// forkIn runs fork on a locked OS thread, inside the v1 pids twin if any.
func (l *Leaf) forkIn(fork func() (int, error)) (pid int, err error) {
	runtime.LockOSThread()
	if l.t.forkInV1(l.slot.pidsTasks, func() { pid, err = fork() }) {
		runtime.UnlockOSThread()
	}
	return pid, err
}

// Kill kills every process in the leaf (cgroup.kill; before Linux 5.14 a
// freeze and SIGKILL). They may still be exiting when it returns.
func (l *Leaf) Kill() error {
	if l == nil {
		return nil
	}
	return l.t.killCgroup(l.slot.dir)
}

// Release ends the leaf: no more forks into it, every process in it
// killed, and the leaf removed once they are gone (waiting up to
// releaseWait; a leaf still busy then is removed by a later sweep, or by
// TreeKiller.Close). Idempotent.
func (l *Leaf) Release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	closed := l.closed
	l.closed = true
	l.mu.Unlock()
	if closed {
		return
	}
	if err := l.t.killCgroup(l.slot.dir); err != nil {
		l.t.log.Warn("killing a cgroup leaf", zap.String("dir", l.slot.dir), zap.Error(err))
	}
	l.slot.closeFD()
	l.t.release(l.slot.dir, true)
}
