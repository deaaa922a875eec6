//go:build linux

// The start path: Start checks the spec, sets up stdio and the cgroup slot,
// hands the command to its launcher when it has one, and forks the child.

package proc

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/reap"
)

// Start starts the process described by spec and returns once the child
// has called execve. Output chunks are passed to out (nil discards them)
// from one reader goroutine per stream.
//
// The child runs in a new session and process group (pgid = sid = pid), has
// SIGTERM as its parent-death signal (none in subreaper mode while the
// process's watchdog runs: TreeKiller.watched), default signal handlers and an empty
// signal mask, and inherits no fd other than 0, 1 and 2. With opts.Tree it
// starts directly inside its own cgroup leaf (CLONE_INTO_CGROUP), or is
// tracked for the subreaper fallback.
//
// A missing program or a missing Dir returns an error for which
// errors.Is(err, syscall.ENOENT) holds; a program that is not executable
// gives syscall.EACCES.
func Start(spec Spec, out OutputFunc, opts Options) (*Process, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("proc: start: empty argv")
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if out == nil {
		out = func(Stream, []byte) {}
	}
	if spec.Dir != "" {
		if err := checkDir(spec.Dir); err != nil {
			return nil, fmt.Errorf("proc: start %q: %w", spec.Argv[0], err)
		}
	}
	path, err := lookPath(spec.Argv[0], spec.Env, spec.Dir)
	if err != nil {
		return nil, fmt.Errorf("proc: start: %w", err)
	}
	if spec.Launcher != nil {
		defer spec.Launcher.Close()
	}
	var st stdio
	if spec.TTY {
		rows, cols := spec.size()
		err = st.openPTY(rows, cols, spec.Launcher, log)
	} else {
		err = st.openPipes(spec.PipeStdin)
	}
	if err != nil {
		st.closeChild()
		st.closeParent()
		return nil, fmt.Errorf("proc: start %q: %w", spec.Argv[0], err)
	}
	if err := markCloexec(); err != nil {
		log.Debug("marking inherited fds close-on-exec", zap.Error(err))
	}
	pid, pidfd, leaf, err := spawn(path, &spec, &st, opts.Tree, log)
	st.closeChild() // the child has its copies; EOF must depend on the child alone
	if err != nil {
		st.closeParent()
		return nil, fmt.Errorf("proc: start %q: %w", spec.Argv[0], err)
	}

	p := &Process{
		pid:         pid,
		tty:         spec.TTY,
		log:         log.With(zap.Int("pid", pid)),
		tree:        opts.Tree,
		leaf:        leaf,
		outputs:     st.outputs,
		out:         out,
		credit:      opts.Credit,
		openOut:     len(st.outputs),
		unfinished:  2,
		exited:      make(chan struct{}),
		exitFlushed: make(chan struct{}),
		outputDone:  make(chan struct{}),
		stdin:       stdinQueue{f: st.stdin, pty: spec.TTY},
	}
	for i, f := range st.outputs {
		p.outs = append(p.outs, &outStream{s: st.streams[i], f: f})
	}
	p.log.Debug("process started", zap.String("path", path), zap.Bool("tty", spec.TTY))
	p.wg.Add(1 + len(st.outputs))
	go p.waitLoop(pidfd)
	for _, o := range p.outs {
		go p.readLoop(o)
	}
	return p, nil
}

// spawn forks and execs the child. The calling goroutine's OS thread stays
// locked across the fork, because Pdeathsig fires when the forking thread
// (not process) exits (go.dev/issue/27505). It returns the pid, the pidfd
// (-1 if the kernel gave none) and the cgroup leaf ("" without one).
func spawn(path string, spec *Spec, st *stdio, tree *TreeKiller, log *zap.Logger) (pid, pidfd int, leaf string, err error) {
	pidfd = -1
	env := spec.Env
	if env == nil {
		env = []string{} // exact environment: nothing inherited
	}
	sys := &syscall.SysProcAttr{
		Setsid:    true,
		Setctty:   spec.TTY,
		Ctty:      0, // the child's fd 0, which is the PTY slave in TTY mode
		Pdeathsig: syscall.SIGTERM,
		PidFD:     &pidfd,
	}
	attr := &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   env,
		Files: []uintptr{uintptr(st.child[0]), uintptr(st.child[1]), uintptr(st.child[2])},
		Sys:   sys,
	}
	if tree.watched() {
		sys.Pdeathsig = 0 // the watchdog kills the whole tree, intact
	}
	argv := spec.argv()
	launched := spec.Launcher != nil

	slot := cgroupSlot{fd: -1}
	if tree != nil {
		var perr error
		if slot, perr = tree.prepare(launched); perr != nil {
			log.Warn("no cgroup leaf; process-group kill only", zap.Error(perr))
		} else if slot.fd >= 0 {
			sys.UseCgroupFD, sys.CgroupFD = true, slot.fd
		}
	}
	if launched {
		// The launcher takes over the environment, the extra fds and the
		// namespaces; a launcher that fails forks nothing.
		path, argv, err = spec.Launcher.Apply(path, argv, attr, slot.fd)
	}
	if err == nil {
		pid, err = forkExec(path, argv, attr, tree, slot.pidsTasks)
		if err != nil && sys.UseCgroupFD && cloneIntoCgroupFailed(err) {
			log.Warn("CLONE_INTO_CGROUP failed; starting outside the cgroup", zap.Error(err))
			sys.UseCgroupFD, sys.CgroupFD = false, 0
			pid, err = forkExec(path, argv, attr, tree, slot.pidsTasks)
			if err == nil {
				err = tree.join(slot.dir, pid)
				if err != nil {
					log.Warn("moving into cgroup leaf", zap.Error(err))
					err = nil
				}
			}
		}
	}
	slot.closeFD()
	if err != nil {
		if tree != nil {
			tree.release(slot.dir, false)
		}
		return 0, -1, "", err
	}
	if launched {
		tree.trackSandboxed(pid)
	}
	tree.watchChild(pid, pidfd, st.masterFD())
	tree.refillSpare() // the next spawn's leaf, made while this child runs
	return pid, pidfd, slot.dir, nil
}

// forkExec runs syscall.ForkExec with the OS thread locked (inside the
// cgroup v1 pids leaf whose tasks file is pidsTasks, if set), and registers
// the pid as owned (reap.Fork; released by setExited) and, in subreaper
// mode, as tracked, before any orphan reaper can look at it. The process-wide fork lock of
// reap is taken before the TreeKiller's, as its reaper does.
func forkExec(path string, argv []string, attr *syscall.ProcAttr, tree *TreeKiller, pidsTasks *os.File) (pid int, err error) {
	return reap.Fork(func() (int, error) {
		unlock := tree.lockSpawn()
		defer unlock()
		if f := tree.forkerFor(attr); f != nil {
			if pid, err = tree.forkOn(f, path, argv, attr, pidsTasks); err != errForkerGone {
				if err == nil {
					tree.track(pid)
				}
				return pid, err
			}
		}
		runtime.LockOSThread()
		if tree.forkInV1(pidsTasks, func() { pid, err = syscall.ForkExec(path, argv, attr) }) {
			runtime.UnlockOSThread()
		}
		if err == nil {
			tree.track(pid)
		}
		return pid, err
	})
}

// cloneIntoCgroupFailed reports errors that clone3 with CLONE_INTO_CGROUP
// gives on kernels or hierarchies that refuse it; retrying without the
// cgroup fd is safe because exec errors (ENOENT, EACCES, ...) differ.
func cloneIntoCgroupFailed(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) ||
		errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.E2BIG)
}

// checkDir returns an error wrapping the errno if dir is not a directory.
func checkDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return &os.PathError{Op: "chdir", Path: dir, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return &os.PathError{Op: "chdir", Path: dir, Err: unix.ENOTDIR}
	}
	return nil
}
