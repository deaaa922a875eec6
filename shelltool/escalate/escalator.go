package escalate

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Escalator runs escalated programs outside any sandbox: the actuator of
// the Escalate action. Each program runs in its own process group, from
// the descriptor of the file that was judged (never by looking its path
// up again), with the request's argv (argv[0] kept) and working
// directory, the server's environment plus the request's harmless
// variables (escalatedEnv), and only the descriptors it is given (before each start, every
// descriptor of this process above 2 is marked close-on-exec: Go creates
// its own so, but a server may inherit some without the flag, and
// explicit passing, which dup2s, is not affected); SIGPIPE is at its
// default (the Go runtime catches SIGPIPE, so exec resets it — a server
// that ignores SIGPIPE would pass that on). Its methods are safe for
// concurrent use. The zero value is not usable: call NewEscalator.
//
// Lifetime of a child: Run returns when the program (the group leader)
// exits, and reaps it. If other processes of its group are still alive
// then (a background job it left), the group is remembered until Run's
// ctx ends or KillAll is called, which kill it. Processes that leave the
// group (setsid) are out of reach of these kills: a Placement that starts
// the programs in the call's cgroup leaf (NewPlacedEscalator) is what
// ends them.
type Escalator struct {
	log *zap.Logger
	// env is the environment escalated programs start from.
	env   []string
	place Placement // nil: programs start where the server runs

	mu       sync.Mutex
	children map[*child]struct{} // guarded by mu: not yet reaped
}

// child is one escalated program, identified by its pid, which is also
// its process group id while it is unreaped.
type child struct {
	pid     int
	stop    chan struct{} // closed by KillAll (once: guarded by stopped)
	stopped bool          // guarded by Escalator.mu
	reaped  bool          // guarded by Escalator.mu: the leader was reaped
	done    chan struct{} // closed once reaped and unregistered
}

// NewEscalator returns an Escalator logging to log (nil: no logs).
func NewEscalator(log *zap.Logger) *Escalator {
	return NewPlacedEscalator(log, nil)
}

// Placement decides where escalated programs start, e.g. in the cgroup
// leaf of the call they run for (a *proc.Leaf: counted against the call's
// limits and killed with it, docs/shell-tool.md §4.1). Fork calls fork,
// which forks and execs the program with sys, once it has added to sys
// what it needs; it may call fork a second time if the first fork failed
// because of what it added.
type Placement interface {
	Fork(sys *syscall.SysProcAttr, fork func() (int, error)) (int, error)
}

// NewPlacedEscalator is NewEscalator whose programs start through place
// (nil: where the server runs).
func NewPlacedEscalator(log *zap.Logger, place Placement) *Escalator {
	if log == nil {
		log = zap.NewNop()
	}
	return &Escalator{log: log, env: serverEnv, place: place, children: map[*child]struct{}{}}
}

// Run starts prog (r.File, as judged) outside the sandbox and waits for
// it to exit. Run does not close prog. stdio
// holds the child's descriptors: stdio[i] becomes descriptor i, a nil
// entry (or a missing 0, 1 or 2) is /dev/null for 0–2 and closed above.
// Run does not close stdio. r.Workdir and r.File must be absolute.
//
// The result is the exit code, 128+N for a death by signal N. When ctx
// ends first, the whole process group is killed (SIGKILL) and Run returns
// 128+9 with a nil error. The error is non-nil only when the program
// was not started (no such file, not executable, bad workdir, ctx
// already done); the code is then 0.
func (e *Escalator) Run(ctx context.Context, r Request, prog *Program, stdio []*os.File) (code int, err error) {
	fds := make([]int, len(stdio))
	for i, f := range stdio {
		fds[i] = -1
		if f == nil {
			continue
		}
		rc, err := f.SyscallConn()
		if err != nil {
			return 0, fmt.Errorf("descriptor %d: %w", i, err)
		}
		// The number stays valid while f is alive (KeepAlive below);
		// Control avoids Fd, which would switch it to blocking mode.
		if err := rc.Control(func(fd uintptr) { fds[i] = int(fd) }); err != nil {
			return 0, fmt.Errorf("descriptor %d: %w", i, err)
		}
	}
	code, err = e.run(ctx, r, prog, fds)
	runtime.KeepAlive(stdio)
	return code, err
}

// run is Run on raw descriptors (fds[i] for i, -1 for none); it does not
// close them.
func (e *Escalator) run(ctx context.Context, r Request, prog *Program, fds []int) (int, error) {
	if err := context.Cause(ctx); err != nil {
		return 0, fmt.Errorf("not started: %w", err)
	}
	if prog == nil {
		return 0, errNoProgram
	}
	if err := noTerminal(fds); err != nil {
		return 0, err
	}
	files, closeNull, err := withDevNull(fds)
	if err != nil {
		return 0, err
	}
	c, err := e.start(r, prog, files)
	runtime.KeepAlive(prog)
	closeNull()
	if err != nil {
		return 0, err
	}
	log := e.log.With(zap.Int("pid", c.pid), zap.String("file", r.File))
	log.Debug("escalated program started")

	exited := make(chan exitResult, 1)
	go func() { exited <- waitExit(c.pid) }()
	var res exitResult
	select {
	case res = <-exited:
	case <-ctx.Done():
		e.kill(c)
		res = <-exited
	case <-c.stop:
		res = <-exited
	}
	if res.err != nil {
		// waitid cannot fail for our own unreaped child; if it did,
		// kill and reap rather than leave the group behind.
		log.Error("waiting for escalated program", zap.Error(res.err))
		e.finish(c)
		return 0, fmt.Errorf("waiting for %s: %w", r.File, res.err)
	}
	if e.settle(ctx, c) {
		return res.code, nil
	}
	log.Debug("escalated program left processes in its group; killing them at the end of the call")
	go func() {
		select {
		case <-ctx.Done():
		case <-c.stop:
		}
		e.finish(c)
	}()
	return res.code, nil
}

// start spawns the child in a new process group and registers it, under
// mu so that KillAll sees every child started before it.
//
// The child execs /proc/self/fd/N, N a descriptor of prog: the kernel
// follows that link to the open file itself, as execveat(fd, "",
// AT_EMPTY_PATH) does. A binary's descriptor is a close-on-exec
// duplicate numbered above any the fork's descriptor set-up touches;
// a script's is passed as descriptor 3 (above stdio; any descriptor
// beyond is dropped), which stays open for the interpreter to read the
// script through ScriptPath (docs/shell-tool.md §11.1).
func (e *Escalator) start(r Request, prog *Program, files []uintptr) (*child, error) {
	// The child runs the copy by number, so no descriptor ForkExec's child
	// writes may land on it: numbers below len(files) (dup'd onto), and
	// the numbers from just above the highest of files and len(files),
	// where it moves its status pipe and any file below its own slot
	// (at most len(files)+1 of them).
	exe, err := unix.FcntlInt(uintptr(prog.Fd()), unix.F_DUPFD_CLOEXEC, shuffleFloor(files))
	if err != nil {
		return nil, os.NewSyscallError("fcntl", err)
	}
	defer unix.Close(exe)
	path := "/proc/self/fd/" + strconv.Itoa(exe)
	if prog.Script {
		path = ScriptPath
		files = append(padFiles(files, scriptFD), uintptr(exe))
	}
	attr := &syscall.ProcAttr{
		Dir:   r.Workdir,
		Env:   escalatedEnv(e.env, r.Workdir, r.Env),
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	markCloseOnExec()
	fork := func() (int, error) { return syscall.ForkExec(path, r.Argv, attr) }
	var pid int
	if e.place != nil {
		pid, err = e.place.Fork(attr.Sys, fork)
	} else {
		pid, err = fork()
	}
	if err != nil {
		return nil, &os.PathError{Op: "exec", Path: r.File, Err: err}
	}
	c := &child{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	e.children[c] = struct{}{}
	return c, nil
}

// shuffleFloor is the lowest number that syscall.ForkExec's child leaves
// alone when its attr.Files is files.
func shuffleFloor(files []uintptr) int {
	top := len(files)
	for _, f := range files {
		if int(f) > top { // ^0 (closed) is -1 as an int
			top = int(f)
		}
	}
	return top + len(files) + 3
}

// ScriptPath is the path an escalated script is run by: the interpreter
// finds it in its argv in place of the script's own path.
const ScriptPath = "/proc/self/fd/3"

const scriptFD = 3

// padFiles returns files cut or padded (with closed entries) to n.
func padFiles(files []uintptr, n int) []uintptr {
	for len(files) < n {
		files = append(files, ^uintptr(0))
	}
	return files[:n]
}

// kill sends SIGKILL to c's process group while c is registered.
func (e *Escalator) kill(c *child) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.children[c]; ok {
		c.killGroup()
	}
}

// settle reaps c's exited leader and reports whether c is over: its
// group is empty, or ctx is done (or KillAll came) and the rest of the
// group was killed. Otherwise c stays registered, by its process group
// id alone, for finish.
func (e *Escalator) settle(ctx context.Context, c *child) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	reap(c.pid)
	c.reaped = true
	if unix.Kill(-c.pid, 0) == nil {
		if ctx.Err() == nil && !c.stopped {
			return false
		}
		c.killGroup()
	}
	delete(e.children, c)
	close(c.done)
	return true
}

// finish kills what is left of c's group, reaps the leader if that is
// not done yet, and unregisters c.
func (e *Escalator) finish(c *child) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c.killGroup()
	if !c.reaped {
		reap(c.pid)
		c.reaped = true
	}
	delete(e.children, c)
	close(c.done)
}

// killGroup sends SIGKILL to c's process group. Until the leader is
// reaped its pid is ours. After that, the kernel keeps the number
// allocated while any process is in the group, so a process with that
// pid can only exist once the group is empty (the id was reused): then
// there is nothing of ours to kill, and nothing is sent. Called with
// Escalator.mu held.
func (c *child) killGroup() {
	if c.reaped {
		if _, err := os.Stat("/proc/" + strconv.Itoa(c.pid)); err == nil {
			return
		}
	}
	_ = unix.Kill(-c.pid, unix.SIGKILL)
}

// KillAll kills the process group of every child started before it and
// waits until each is reaped and unregistered. The Escalator stays
// usable.
func (e *Escalator) KillAll() {
	e.mu.Lock()
	var wait []chan struct{}
	for c := range e.children {
		c.killGroup()
		if !c.stopped {
			c.stopped = true
			close(c.stop)
		}
		wait = append(wait, c.done)
	}
	e.mu.Unlock()
	for _, d := range wait {
		<-d
	}
}

// noTerminal refuses descriptors that are terminals (docs/shell-tool.md
// §11.2): on a terminal, programs turn interactive, and the command that
// holds the other side drives them — the pager of an allowed `git log`
// runs any `!CMD` typed at it, outside the sandbox. A shell call has no
// terminal of its own; one here was made by the command.
func noTerminal(fds []int) error {
	for i, fd := range fds {
		if fd < 0 {
			continue
		}
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
			return fmt.Errorf("not started: its descriptor %d is a terminal, which the command could drive it through (an escalated program never gets one)", i)
		}
	}
	return nil
}

// withDevNull returns fds as the child's descriptor table, with /dev/null
// in place of a missing 0, 1 or 2, and a func closing that /dev/null.
func withDevNull(fds []int) ([]uintptr, func(), error) {
	out := make([]uintptr, max(len(fds), 3))
	null := -1
	for i := range out {
		fd := -1
		if i < len(fds) {
			fd = fds[i]
		}
		if fd < 0 && i < 3 {
			if null < 0 {
				var err error
				null, err = unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
				if err != nil {
					return nil, nil, &os.PathError{Op: "open", Path: os.DevNull, Err: err}
				}
			}
			fd = null
		}
		out[i] = uintptr(fd) // -1 becomes ^0: closed in the child
	}
	return out, func() {
		if null >= 0 {
			_ = unix.Close(null)
		}
	}, nil
}
