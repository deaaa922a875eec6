//go:build linux

package proc

import (
	"errors"
	"fmt"
	"github.com/codexec/codex/sandbox"
	"os"
	ossignal "os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// readBufs holds the 64 KiB read buffers. A reader takes one only while its
// fd is readable and returns it (or hands it off) before it waits again, so
// an idle process holds no buffer. It is a cache, not state: any buffer may
// be dropped at any time.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readSize); return &b }}

// Start starts the process described by spec and returns once the child
// has called execve. Output chunks are passed to out (nil discards them)
// from one reader goroutine per stream.
//
// The child runs in a new session and process group (pgid = sid = pid), has
// SIGTERM as its parent-death signal, default signal handlers and an empty
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
	var st stdio
	if spec.TTY {
		rows, cols := spec.size()
		err = st.openPTY(rows, cols, spec.Sandbox.ReplacesDev(), log)
	} else {
		err = st.openPipes(spec.PipeStdin)
	}
	var wrapped *sandbox.WrappedCommand
	if err == nil && spec.Sandbox != nil {
		wrapped, err = wrapSandbox(&spec, path, st.takePTS())
	}
	if err != nil {
		st.closeChild()
		st.closeParent()
		return nil, fmt.Errorf("proc: start %q: %w", spec.Argv[0], err)
	}
	if wrapped != nil {
		defer func() {
			for _, f := range wrapped.ExtraFiles {
				_ = f.Close()
			}
		}()
	}
	if err := markCloexec(); err != nil {
		log.Debug("marking inherited fds close-on-exec", zap.Error(err))
	}
	pid, pidfd, leaf, err := spawn(path, &spec, &st, wrapped, opts.Tree, log)
	st.closeChild() // the child has its copies; EOF must depend on the child alone
	if err != nil {
		st.closeParent()
		return nil, fmt.Errorf("proc: start %q: %w", spec.Argv[0], err)
	}

	p := &Process{
		pid:        pid,
		tty:        spec.TTY,
		log:        log.With(zap.Int("pid", pid)),
		tree:       opts.Tree,
		leaf:       leaf,
		outputs:    st.outputs,
		openOut:    len(st.outputs),
		unfinished: 2,
		exited:     make(chan struct{}),
		outputDone: make(chan struct{}),
		stdin:      stdinQueue{f: st.stdin, pty: spec.TTY},
	}
	p.log.Debug("process started", zap.String("path", path), zap.Bool("tty", spec.TTY))
	p.wg.Add(1 + len(st.outputs))
	go p.waitLoop(pidfd)
	for i, f := range st.outputs {
		go p.readLoop(st.streams[i], f, out, opts.Credit)
	}
	return p, nil
}

// spawn forks and execs the child. The calling goroutine's OS thread stays
// locked across the fork, because Pdeathsig fires when the forking thread
// (not process) exits (go.dev/issue/27505). It returns the pid, the pidfd
// (-1 if the kernel gave none) and the cgroup leaf ("" without one).
func spawn(path string, spec *Spec, st *stdio, wrapped *sandbox.WrappedCommand, tree *TreeKiller, log *zap.Logger) (pid, pidfd int, leaf string, err error) {
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
	argv := spec.argv()
	if wrapped != nil {
		// The helper gets an empty environment; the command's travels in
		// the plan, on fd 3.
		path, argv = wrapped.ApplyTo(attr)
	}

	slot := cgroupSlot{fd: -1}
	if tree != nil {
		if slot, err = tree.prepare(wrapped != nil); err != nil {
			log.Warn("no cgroup leaf; process-group kill only", zap.Error(err))
		} else if slot.fd >= 0 {
			sys.UseCgroupFD, sys.CgroupFD = true, slot.fd
		}
	}
	if wrapped != nil && wrapped.DenyNamedUnixSends {
		denyNamedUnixSends(slot, log)
	}
	pid, err = forkExec(path, argv, attr, tree, slot.pids)
	if err != nil && sys.UseCgroupFD && cloneIntoCgroupFailed(err) {
		log.Warn("CLONE_INTO_CGROUP failed; starting outside the cgroup", zap.Error(err))
		sys.UseCgroupFD, sys.CgroupFD = false, 0
		pid, err = forkExec(path, argv, attr, tree, slot.pids)
		if err == nil {
			err = tree.join(slot.dir, pid)
			if err != nil {
				log.Warn("moving into cgroup leaf", zap.Error(err))
				err = nil
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
	if wrapped != nil {
		tree.trackSandboxed(pid, slot.dir)
	}
	return pid, pidfd, slot.dir, nil
}

// forkExec runs syscall.ForkExec with the OS thread locked (inside the
// cgroup v1 pids leaf pidsLeaf, if set), and in subreaper mode registers
// the pid before the orphan reaper can look at it.
func forkExec(path string, argv []string, attr *syscall.ProcAttr, tree *TreeKiller, pidsLeaf string) (pid int, err error) {
	unlock := tree.lockSpawn()
	defer unlock()
	runtime.LockOSThread()
	if tree.forkInV1(pidsLeaf, func() { pid, err = syscall.ForkExec(path, argv, attr) }) {
		runtime.UnlockOSThread()
	}
	if err == nil {
		tree.track(pid)
	}
	return pid, err
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

// stdio holds the fds of one spawn: the child's 0, 1 and 2, and the
// parent's ends. Owned by Start until handed to the Process.
type stdio struct {
	child    [3]int     // the child's fds 0, 1, 2 (may repeat); closed by closeChild
	childOwn []int      // distinct fds in child to close
	slave    *os.File   // PTY slave (also in child); closed by closeChild
	pts      *os.File   // devpts mount of a private PTY (sandbox.OpenPTY); see takePTS
	outputs  []*os.File // parent read ends, non-blocking
	streams  []Stream   // the stream of each output
	stdin    *os.File   // parent write end: stdin pipe or PTY master; nil for /dev/null
}

// openPipes creates the stdout and stderr pipes, and a stdin pipe or
// /dev/null. The parent's ends are non-blocking and owned by the netpoller;
// the child's ends stay blocking, as programs expect.
func (st *stdio) openPipes(pipeStdin bool) error {
	if pipeStdin {
		r, w, err := pipe()
		if err != nil {
			return err
		}
		st.addChild(0, r)
		if st.stdin, err = nonblockFile(w, "stdin"); err != nil {
			return err
		}
	} else {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: "/dev/null", Err: err}
		}
		st.addChild(0, fd)
	}
	for i, s := range []Stream{StreamStdout, StreamStderr} {
		r, w, err := pipe()
		if err != nil {
			return err
		}
		st.addChild(1+i, w)
		f, err := nonblockFile(r, s.String())
		if err != nil {
			return err
		}
		st.outputs = append(st.outputs, f)
		st.streams = append(st.streams, s)
	}
	return nil
}

// addChild makes fd the child's fd i; closeChild closes it after the fork.
func (st *stdio) addChild(i, fd int) {
	st.child[i] = fd
	st.childOwn = append(st.childOwn, fd)
}

// closeChild closes the parent's copies of the child's fds.
func (st *stdio) closeChild() {
	for _, fd := range st.childOwn {
		_ = unix.Close(fd)
	}
	st.childOwn = nil
	if st.slave != nil {
		_ = st.slave.Close()
		st.slave = nil
	}
	if st.pts != nil {
		_ = st.pts.Close()
		st.pts = nil
	}
}

// takePTS hands the devpts mount of a private PTY (nil without one) to the
// caller, who closes it.
func (st *stdio) takePTS() *os.File {
	f := st.pts
	st.pts = nil
	return f
}

// closeParent closes the parent's ends after a failed start.
func (st *stdio) closeParent() {
	for _, f := range st.outputs {
		_ = f.Close()
	}
	if st.stdin != nil && !st.isOutput(st.stdin) {
		_ = st.stdin.Close()
	}
}

// isOutput reports whether f is one of the output files (the PTY master
// is both output and stdin).
func (st *stdio) isOutput(f *os.File) bool {
	for _, o := range st.outputs {
		if o == f {
			return true
		}
	}
	return false
}

// pipe returns a close-on-exec pipe.
func pipe() (r, w int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, -1, os.NewSyscallError("pipe2", err)
	}
	return p[0], p[1], nil
}

// nonblockFile wraps fd in an *os.File registered with the netpoller. On
// error fd is closed.
func nonblockFile(fd int, name string) (*os.File, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// cloexecInherited sets FD_CLOEXEC on every fd above 2 that lacks it. Go
// creates all its fds close-on-exec, but fds inherited by the server (or made
// by a raw dup) are not, and syscall.ForkExec cannot close_range in the
// child. Setting the flag never affects explicit fd passing, which dup2s.
func cloexecInherited() error {
	dfd, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("open /proc/self/fd", err)
	}
	defer unix.Close(dfd)
	var buf [4096]byte
	for {
		n, err := unix.ReadDirent(dfd, buf[:])
		if err != nil {
			return os.NewSyscallError("getdents", err)
		}
		if n == 0 {
			return nil
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			fd, err := strconv.Atoi(name)
			if err != nil || fd <= 2 || fd == dfd {
				continue
			}
			if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && fl&unix.FD_CLOEXEC == 0 {
				_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, fl|unix.FD_CLOEXEC)
			}
		}
	}
}

// readLoop copies one output stream to out until EOF or until the file is
// closed. The read buffer comes from readBufs only while data is ready.
// With a credit, a reader takes one when its stream is readable, before it
// reads, and gives it back once out returned or when it parks: a consumer
// that stalls holds at most the credit's chunks, not one per process, and
// the other readers wait holding neither a buffer nor a credit.
func (p *Process) readLoop(s Stream, f *os.File, out OutputFunc, credit *OutputCredit) {
	defer p.wg.Done()
	defer p.streamDone()
	rc, err := f.SyscallConn()
	if err != nil {
		p.log.Error("output stream not pollable", zap.Stringer("stream", s), zap.Error(err))
		return
	}
	grown := false
	held := false // this reader holds a credit
	for {
		var (
			bp       *[]byte
			n        int
			rerr     error
			waitCred bool
		)
		err := rc.Read(func(fd uintptr) bool {
			// A credit is needed before the read; without one free, go
			// back and wait for it outside the poller, holding nothing.
			if credit != nil && !held {
				if !credit.tryAcquire() {
					waitCred = true
					return true
				}
				held = true
			}
			bp = readBufs.Get().(*[]byte)
			for {
				n, rerr = unix.Read(int(fd), *bp)
				if rerr != unix.EINTR {
					break
				}
			}
			if rerr == unix.EAGAIN {
				readBufs.Put(bp)
				bp = nil
				if held {
					// Park without a credit either: an idle stream must not
					// hold one.
					credit.release()
					held = false
				}
				return false // park in the netpoller without a buffer
			}
			if s == StreamPTY && rerr == nil && n > 0 {
				n = drainPTY(int(fd), *bp, n)
			}
			if s != StreamPTY && n >= 64<<10 && !grown {
				// A full default pipe: a stream, not a trickle. Let the
				// child write further ahead and read more per call.
				grown = true
				_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, bigPipe)
			}
			return true
		})
		if err == nil && waitCred {
			credit.acquire()
			held = true
			continue
		}
		release := func() {
			if held {
				credit.release()
				held = false
			}
		}
		if err != nil { // closed by forceClose or Close
			release()
			return
		}
		if rerr != nil || n <= 0 {
			release()
			readBufs.Put(bp)
			// EIO from a PTY master means every slave fd is closed: EOF.
			if rerr != nil && !(s == StreamPTY && rerr == unix.EIO) {
				p.log.Warn("reading output", zap.Stringer("stream", s), zap.Error(rerr))
			}
			break
		}
		// The chunk is only lent to out, which copies what it keeps; the
		// buffer goes straight back to the pool, so a stream allocates
		// nothing per read.
		out(s, (*bp)[:n])
		readBufs.Put(bp)
		release()
	}
	if s != StreamPTY { // the PTY master is also the stdin writer's; Close closes it
		_ = closeFile(f)
	}
}

// waitLoop waits for the child to exit and reaps it. The pidfd is polled
// by the netpoller, so no OS thread blocks per child; without a usable
// pidfd it falls back to a blocking waitid.
func (p *Process) waitLoop(pidfd int) {
	defer p.wg.Done()
	code, ok := -1, false
	if pidfd >= 0 {
		code, ok = p.waitPidfd(pidfd)
	}
	if !ok {
		code = p.waitBlocking()
	}
	p.setExited(code)
}

// waitPidfd reaps the child once its pidfd polls readable. ok is false if
// the pidfd cannot be polled.
func (p *Process) waitPidfd(pidfd int) (code int, ok bool) {
	f, err := nonblockFile(pidfd, "pidfd")
	if err != nil {
		return -1, false
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, false
	}
	code = -1
	reaped := false
	err = rc.Read(func(fd uintptr) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		var si siginfo
		err := waitid(unix.P_PIDFD, int(fd), &si, unix.WEXITED|unix.WNOHANG)
		for err == unix.EINTR {
			err = waitid(unix.P_PIDFD, int(fd), &si, unix.WEXITED|unix.WNOHANG)
		}
		if err == unix.EAGAIN {
			return false // a non-blocking pidfd may say EAGAIN instead of si.pid == 0
		}
		if err != nil {
			// ECHILD: reaped behind our back (e.g. by a foreign SIGCHLD
			// reaper). The exit status is lost.
			p.log.Warn("waitid", zap.Error(err))
			p.reaped, reaped = true, true
			return true
		}
		if si.pid == 0 {
			return false // still running
		}
		p.reaped, reaped = true, true
		code = si.exitCode()
		return true
	})
	if err != nil && !reaped {
		return -1, false
	}
	return code, true
}

// waitBlocking waits without reaping (WNOWAIT), which blocks an OS thread,
// then reaps under p.mu so that Signal never targets a reaped pid.
func (p *Process) waitBlocking() int {
	var si siginfo
	for {
		err := waitid(unix.P_PID, p.pid, &si, unix.WEXITED|unix.WNOWAIT)
		if err != unix.EINTR {
			break
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reaped = true
	si = siginfo{}
	if err := waitid(unix.P_PID, p.pid, &si, unix.WEXITED|unix.WNOHANG); err != nil || si.pid == 0 {
		return -1
	}
	return si.exitCode()
}

// siginfoPad is the padding before the siginfo union: it is pointer-aligned.
const siginfoPad = unsafe.Sizeof(uintptr(0)) - 4

// siginfo is the SIGCHLD view of the kernel's siginfo_t, which
// unix.Siginfo leaves opaque (waitid(2)).
type siginfo struct {
	signo, errno, code int32
	_                  [siginfoPad]byte
	pid                int32
	uid                uint32
	status             int32
	_                  [128 - 24 - siginfoPad]byte
}

// si_code values for SIGCHLD (<asm-generic/siginfo.h>).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// exitCode maps a CLD_* code to the exit code of protocol.md §7.7.
func (si *siginfo) exitCode() int {
	switch si.code {
	case cldExited:
		return int(si.status)
	case cldKilled, cldDumped:
		return 128 + int(si.status)
	}
	return -1
}

// waitid is waitid(2) with a siginfo that exposes the SIGCHLD fields.
func waitid(idtype, id int, si *siginfo, options int) error {
	_, _, e := unix.Syscall6(unix.SYS_WAITID, uintptr(idtype), uintptr(id),
		uintptr(unsafe.Pointer(si)), uintptr(options), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// ClaimIgnoredSignals makes sure children start with every signal at its
// default disposition (protocol.md §7.4), even when the server inherited
// some ignored (nohup, a background job of a non-interactive shell, a
// supervisor). execve passes SIG_IGN on, and the Go runtime keeps an
// inherited SIG_IGN, so without this every child would ignore them too.
//
// Standard signals are claimed through os/signal: the runtime installs its
// handler (the fork then resets it to SIG_DFL in the child) and delivers
// them to a channel nobody reads, so the server still ignores them in
// effect. Real-time signals the runtime leaves alone (32 and 33) are set to
// SIG_DFL directly; nothing sends them to a server. Signals the runtime
// already handles, for example after signal.NotifyContext, need nothing.
//
// Call it once from main before starting processes. The returned function
// restores the inherited state.
func ClaimIgnoredSignals() (restore func()) {
	var claimed []os.Signal
	var raw []int
	for sig := 1; sig <= 64; sig++ {
		if sig == int(syscall.SIGKILL) || sig == int(syscall.SIGSTOP) || !sigIgnored(sig) {
			continue
		}
		if sig < 32 {
			claimed = append(claimed, syscall.Signal(sig))
		} else if setSigaction(sig, sigDFL) == nil {
			raw = append(raw, sig)
		}
	}
	c := make(chan os.Signal, 1) // never read: a full channel drops signals
	if len(claimed) > 0 {
		ossignal.Notify(c, claimed...)
	}
	return func() {
		if len(claimed) > 0 {
			ossignal.Stop(c) // the runtime restores the inherited SIG_IGN
		}
		for _, sig := range raw {
			_ = setSigaction(sig, sigIGN)
		}
	}
}

const (
	sigDFL = 0
	sigIGN = 1
)

// kernelSigaction is struct sigaction as the rt_sigaction system call
// takes it on Linux.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// sigIgnored reports whether sig is currently SIG_IGN.
func sigIgnored(sig int) bool {
	var old kernelSigaction
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0)
	return errno == 0 && old.handler == sigIGN
}

// setSigaction sets sig to SIG_DFL or SIG_IGN.
func setSigaction(sig int, handler uintptr) error {
	act := kernelSigaction{handler: handler}
	if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// Signal sends sig to the child's process group. It is a no-op returning
// nil once the child was reaped (or if the group is already gone).
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return nil
	}
	if err := unix.Kill(-p.pid, sig); err != nil && err != unix.ESRCH {
		return fmt.Errorf("proc: signal %v: %w", sig, os.NewSyscallError("kill", err))
	}
	return nil
}

// Kill sends SIGKILL to the whole tree: the process group and, with a
// TreeKiller, every descendant, including those that called setsid. If the
// output has not reached EOF KillGrace after the first Kill, the parent's
// read ends are force-closed so that OutputDone fires. Kill may be called
// after the exit: it then kills what is left of the tree.
func (p *Process) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killed = true
	p.armGrace()
	var err error
	if p.tree != nil {
		// Before the group kill: the subreaper walk must see the tree intact.
		err = p.tree.kill(p.pid, p.leaf, !p.reaped)
	}
	if !p.reaped || p.openOut > 0 {
		// After the reap the group id can only still name our group while
		// a member holds it, which open output suggests.
		if kerr := unix.Kill(-p.pid, unix.SIGKILL); kerr != nil && kerr != unix.ESRCH && err == nil {
			err = os.NewSyscallError("kill", kerr)
		}
	}
	if err != nil {
		return fmt.Errorf("proc: kill: %w", err)
	}
	return nil
}

// markCloexec sets FD_CLOEXEC on every fd above 2 in one close_range(2)
// call (Linux 5.11+), falling back to the /proc walk on older kernels.
func markCloexec() error {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	return cloexecInherited()
}

// drainPTY keeps reading a PTY master into buf after a first read of n
// bytes, while more data is ready and buf has room for another line
// discipline buffer (4 KiB). The terminal hands data over at most 4 KiB at
// a time; gathering what is already there into one chunk saves a
// notification and a wake-up per 4 KiB under a burst, and adds no latency
// (it stops at the first EAGAIN).
func drainPTY(fd int, buf []byte, n int) int {
	for len(buf)-n >= 4096 {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || m <= 0 {
			break // EAGAIN, or EIO/EOF that the next read reports
		}
		n += m
	}
	return n
}

// denyNamedUnixSends closes, for a network-off sandbox, the path from an
// AF_UNIX datagram socketpair to a host socket by name, on the process's
// own cgroup leaf. Without a leaf, or where the kernel refuses, the gap
// stays open (as before) and a warning says so, once per process.
func denyNamedUnixSends(slot cgroupSlot, log *zap.Logger) {
	err := errNoLeaf
	if slot.fd >= 0 {
		err = sandbox.DenyNamedUnixSends(slot.fd)
	}
	if err != nil {
		unixSendWarning.Do(func() {
			log.Warn("a network-off sandbox can still sendmsg to host unix datagram sockets by path", zap.Error(err))
		})
	}
}

var (
	errNoLeaf       = errors.New("no cgroup leaf")
	unixSendWarning sync.Once
)

// wrapSandbox fills the plan's command from spec (with argv[0] resolved
// against the child's PATH, as for an unsandboxed start) and wraps it.
//
// pts, when not nil, is the devpts mount of the command's terminal
// (sandbox.OpenPTY): it goes to the helper as fd sandbox.PTSFD, and is
// closed with the other ExtraFiles (or here, on failure).
func wrapSandbox(spec *Spec, path string, pts *os.File) (*sandbox.WrappedCommand, error) {
	plan := *spec.Sandbox
	if pts != nil {
		plan.PTSFD = sandbox.PTSFD
	}
	plan.Argv = append([]string{path}, spec.Argv[1:]...)
	plan.Arg0 = spec.Argv[0]
	if spec.Arg0 != "" {
		plan.Arg0 = spec.Arg0
	}
	plan.Dir, plan.Env = spec.Dir, spec.Env
	// Writable roots are bound at their canonical paths, so a symlinked cwd
	// runs in its canonical location (sandbox.md §7 item 22).
	if d, err := filepath.EvalSymlinks(spec.Dir); err == nil {
		plan.Dir = d
	}
	// The helper is our running image (sandbox.SelfExe), never the path
	// of our executable: a sandboxed command may have replaced that file.
	w, err := sandbox.Wrap(plan)
	if pts != nil {
		if err == nil {
			w.ExtraFiles = append(w.ExtraFiles, pts)
		} else {
			_ = pts.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	return &w, nil
}
