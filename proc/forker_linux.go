//go:build linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// A fork copies the forking thread's fd table (dup_fd) and the child
// closes every close-on-exec fd in the copy before it runs the command
// (do_close_on_exec), so with thousands of live processes, each holding
// its pipes and pidfd, every start pays about 0.24 µs of CPU per open fd.
// The forker takes that cost away: it is one OS thread of the server with
// an fd table of its own (unshare(CLONE_FILES)), trimmed to the Go
// runtime's poller fds, into which each start brings only the fds the
// child inherits (pidfd_getfd(2) on our own process, whose leader thread
// keeps the server's table) and out of which they are closed after the
// fork. The children are still the server's children: the thread belongs
// to the server's thread group, so waitid, pidfds and the subreaper
// bookkeeping are unchanged.
//
// Two rules follow from the private table. The thread stays locked to its
// goroutine for its whole life and ends with it, so that no other goroutine
// ever runs on it. And it must not end while children it forked are alive
// (the parent-death signal fires when the forking thread exits), so it
// lives as long as its TreeKiller, which kills every child at Close.
//
// The forker costs a goroutine hand-off and a few syscalls per start, more
// than the copy of a small table saves, so spawn uses it only when the
// server's table is large: when an fd the child inherits is numbered at
// least forkerMinFD (the kernel hands out the lowest free number, so a
// high number means a full table).
type forker struct {
	tid    int        // the thread's id, once it runs
	mu     sync.Mutex // one request at a time; held by Close while it stops the thread
	reqs   chan *forkReq
	done   chan struct{} // closed when the thread has ended
	closed bool

	// Owned by the thread: its copy of the TreeKiller's v1 home tasks
	// file (-1 without), and whether the thread failed to return there
	// after a fork, so that it tries again before the next one.
	home  int
	stuck bool
}

// forkerMinFD is the lowest inherited fd number for which spawn forks on
// the forker: from about here the copy and close of the server's table
// cost more than the hand-off (BenchmarkStartTrueFdTable). Tests lower a
// TreeKiller's copy (forkerSlot.minFD) to force the forker.
const forkerMinFD = 512

// errForkerGone says the forker could not run a request, which is then
// forked the ordinary way.
var errForkerGone = errors.New("proc: forker unavailable")

// forkReq is one fork on the forker. The fds in attr (Files and
// Sys.CgroupFD) and tasks are numbers in the server's table, which the
// requester keeps open until the fork returns.
type forkReq struct {
	path string
	argv []string
	attr *syscall.ProcAttr
	// v1 pids: the leaf's tasks file, or -1.
	tasks int

	pid      int
	err      error // the fork's error, or errForkerGone
	enterErr error // the thread could not enter the v1 leaf; forked anyway
	stuck    error // the thread could not leave the v1 leaf after the fork
	done     chan struct{}
}

// startForker starts the forker's thread and returns once its table is
// trimmed, or with the reason it cannot run (old kernel, no pidfd_getfd).
// home, if not -1, is the server's fd of the v1 home tasks file, open
// until startForker returns; the thread keeps a copy.
func startForker(home int) (*forker, error) {
	f := &forker{reqs: make(chan *forkReq), done: make(chan struct{}), home: home}
	ready := make(chan error, 1)
	go f.run(ready, nil)
	if err := <-ready; err != nil {
		<-f.done
		return nil, err
	}
	return f, nil
}

// run is the forker's goroutine. It locks its thread and never unlocks
// it. On the main thread, whose table is the one pidfd_getfd and
// /proc/self/fd see, it starts again on another thread (which the runtime
// must pick while this one is locked) and leaves this one unchanged.
func (f *forker) run(ready chan<- error, locked chan<- struct{}) {
	runtime.LockOSThread()
	if locked != nil {
		close(locked)
	}
	if unix.Gettid() == unix.Getpid() {
		other := make(chan struct{})
		go f.run(ready, other)
		<-other
		runtime.UnlockOSThread()
		return
	}
	defer close(f.done)
	// From here the thread's table may differ from the server's: the
	// goroutine ends locked, and the runtime ends the thread with it.
	leader, err := privateTable()
	if err == nil && f.home >= 0 {
		f.home, err = unix.PidfdGetfd(leader, f.home, 0)
	}
	if err != nil {
		ready <- fmt.Errorf("proc: forker: %w", err)
		return
	}
	f.tid = unix.Gettid()
	ready <- nil
	for r := range f.reqs {
		r.pid, r.err = f.fork(leader, r)
		close(r.done)
	}
}

// privateTable gives the calling thread a table of its own holding 0 and
// 1 on /dev/null, the server's stderr (for a crash report), the runtime's
// poller fds (epoll and its eventfd, which the runtime uses from any
// thread) and a pidfd of our own process, which it returns.
func privateTable() (leader int, err error) {
	// The poller's fds must exist before the table is split off.
	if r, w, err := os.Pipe(); err == nil {
		_ = r.Close()
		_ = w.Close()
	}
	if err := unix.Unshare(unix.CLONE_FILES); err != nil {
		return -1, os.NewSyscallError("unshare(CLONE_FILES)", err)
	}
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: "/dev/null", Err: err}
	}
	for _, fd := range []int{0, 1} {
		if err := unix.Dup3(null, fd, 0); err != nil {
			return -1, os.NewSyscallError("dup3", err)
		}
	}
	if err := trimTable(null); err != nil {
		return -1, err
	}
	_ = unix.Close(null)
	// What the trim kept is the runtime's; make sure no child inherits
	// it (the flag is per table: the server's close_range before each
	// start does not reach this one).
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return -1, os.NewSyscallError("close_range", err)
	}
	leader, err = unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return -1, os.NewSyscallError("pidfd_open", err)
	}
	// The thread-group leader's table is the server's: check that it is
	// readable here (pidfd_getfd needs Linux 5.6).
	fd, err := unix.PidfdGetfd(leader, 2, 0)
	if err != nil {
		return -1, os.NewSyscallError("pidfd_getfd", err)
	}
	_ = unix.Close(fd)
	return leader, nil
}

// trimTable closes every fd above 2 of the calling thread's (private)
// table but keep and the runtime's poller fds.
func trimTable(keep int) error {
	lbuf := make([]byte, 64)
	return eachFD("/proc/thread-self/fd", func(dfd, fd int) {
		if fd == keep {
			return
		}
		if n, err := unix.Readlinkat(dfd, strconv.Itoa(fd), lbuf); err == nil {
			switch string(lbuf[:n]) {
			case "anon_inode:[eventpoll]", "anon_inode:[eventfd]":
				return
			}
		}
		_ = unix.Close(fd)
	})
}

// fork runs one request on the forker's thread.
func (f *forker) fork(leader int, r *forkReq) (pid int, err error) {
	var got []int
	defer func() {
		for _, fd := range got {
			_ = unix.Close(fd)
		}
	}()
	bring := func(fd int) (int, error) {
		nfd, err := unix.PidfdGetfd(leader, fd, 0)
		if err != nil {
			return -1, err
		}
		got = append(got, nfd)
		return nfd, nil
	}
	attr := *r.attr
	sys := *r.attr.Sys
	attr.Sys = &sys
	sys.PidFD = nil // the caller opens the pidfd in its own table
	attr.Files = make([]uintptr, len(r.attr.Files))
	for i, fd := range r.attr.Files {
		if int(fd) < 0 {
			attr.Files[i] = fd
			continue
		}
		nfd, err := bring(int(fd))
		if err != nil {
			return 0, errForkerGone
		}
		attr.Files[i] = uintptr(nfd)
	}
	if sys.UseCgroupFD {
		if sys.CgroupFD, err = bring(sys.CgroupFD); err != nil {
			return 0, errForkerGone
		}
	}
	if f.stuck && f.goHome() != nil {
		// Still in another process's pids leaf: a child forked here
		// would count against that limit.
		return 0, errForkerGone
	}
	if r.tasks < 0 {
		return syscall.ForkExec(r.path, r.argv, &attr)
	}
	tasks, err := bring(r.tasks)
	if err != nil {
		return 0, errForkerGone
	}
	if _, err := unix.Write(tasks, []byte(selfTask)); err != nil {
		r.enterErr = os.NewSyscallError("write tasks", err)
	}
	pid, err = syscall.ForkExec(r.path, r.argv, &attr)
	if r.enterErr == nil {
		r.stuck = f.goHome()
	}
	return pid, err
}

// goHome moves the thread back into the server's own v1 pids cgroup.
func (f *forker) goHome() error {
	if _, err := unix.Write(f.home, []byte(selfTask)); err != nil {
		f.stuck = true
		return os.NewSyscallError("write tasks", err)
	}
	f.stuck = false
	return nil
}

// Fork runs r on the forker and waits for it. It returns errForkerGone
// at once when the forker is busy (a start whose exec hangs, on a stuck
// mount say, must not hold up the others, which fork the ordinary way
// meanwhile) or closed.
func (f *forker) Fork(r *forkReq) (int, error) {
	if !f.mu.TryLock() {
		return 0, errForkerGone
	}
	defer f.mu.Unlock()
	if f.closed {
		return 0, errForkerGone
	}
	r.done = make(chan struct{})
	f.reqs <- r
	<-r.done
	return r.pid, r.err
}

// Close ends the forker's thread and waits for it. Call it only when no
// child it forked is left alive (see forker). Idempotent.
func (f *forker) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.reqs)
		<-f.done
	}
}

// forkerSlot is a TreeKiller's forker, started on the first large-table
// spawn and closed with the TreeKiller.
type forkerSlot struct {
	minFD  uintptr // forkerMinFD, or lower in tests
	mu     sync.Mutex
	f      *forker
	failed bool // it could not start: ordinary forks from then on
	closed bool
}

// forkerFor returns the forker to fork attr on, or nil when attr's fds
// are all below forkerMinFD or there is no forker.
func (t *TreeKiller) forkerFor(attr *syscall.ProcAttr) *forker {
	if t == nil {
		return nil
	}
	top := uintptr(0)
	for _, fd := range attr.Files {
		if int(fd) >= 0 {
			top = max(top, fd)
		}
	}
	s := &t.forker
	if top < s.minFD {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil && !s.failed && !s.closed {
		home := -1
		if t.v1 != nil {
			home = int(t.v1.home.Fd()) // open: Close does not run during a start
		}
		f, err := startForker(home)
		if err != nil {
			s.failed = true
			t.log.Info("no forker; forks copy the whole fd table", zap.Error(err))
		}
		s.f = f
	}
	return s.f
}

// forkOn forks on f what forkExec would fork (in the v1 pids leaf whose
// tasks file is pidsTasks, if set) and opens the child's pidfd where
// attr asks for one. errForkerGone means nothing was forked.
func (t *TreeKiller) forkOn(f *forker, path string, argv []string, attr *syscall.ProcAttr, pidsTasks *os.File) (pid int, err error) {
	r := &forkReq{path: path, argv: argv, attr: attr, tasks: -1}
	if pidsTasks != nil && t.v1 != nil {
		// Control holds the file open (its number cannot be reused)
		// until the fork returned.
		rc, cerr := pidsTasks.SyscallConn()
		if cerr != nil {
			return 0, errForkerGone
		}
		err = errForkerGone
		if cerr := rc.Control(func(fd uintptr) {
			r.tasks = int(fd)
			pid, err = f.Fork(r)
		}); cerr != nil {
			return 0, errForkerGone
		}
	} else {
		pid, err = f.Fork(r)
	}
	if r.enterErr != nil {
		t.limitWarn.Do(func() {
			t.log.Warn("cannot enter the pids leaf; continuing without the limit", zap.Error(r.enterErr))
		})
	}
	if r.stuck != nil {
		// The thread tries again before its next fork, and forks nothing
		// until it is home; meanwhile it counts in this leaf, whose
		// removal waits for it.
		t.log.Error("forker thread stuck in a pids leaf", zap.Error(r.stuck))
	}
	if err == nil && attr.Sys.PidFD != nil {
		// Our child, not yet reaped by anyone (reap.Fork, lockSpawn):
		// the pid cannot have been reused.
		fd, perr := unix.PidfdOpen(pid, 0)
		if perr != nil {
			// The server's table is full (EMFILE): fail the start as a
			// clone3 that could not install the pidfd would have.
			_ = unix.Kill(pid, unix.SIGKILL)
			var ws unix.WaitStatus
			for {
				if _, werr := unix.Wait4(pid, &ws, 0, nil); werr != unix.EINTR {
					break
				}
			}
			return 0, os.NewSyscallError("pidfd_open", perr)
		}
		*attr.Sys.PidFD = fd
	}
	return pid, err
}

// closeForker ends the forker, after every child was killed.
func (t *TreeKiller) closeForker() {
	s := &t.forker
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.f != nil {
		s.f.Close()
	}
}
