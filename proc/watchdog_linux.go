//go:build linux

// The server's side of its watchdog (docs/operations.md §5): a process of
// our own binary that outlives a server killed with SIGKILL and then
// kills what the server started and removes its placeholders.

package proc

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/fsat"
	"github.com/codexec/codex/internal/reap"
)

// WatchdogName is argv[0] of the watchdog process; main dispatches it to
// RunWatchdog before anything else.
const WatchdogName = "codex-exec-watchdog"

// selfExe is how the watchdog is started: the running image of our binary,
// never its path, which a sandboxed command may have replaced
// (docs/sandbox.md §4.1).
const selfExe = "/proc/self/exe"

// RemoveRecorded removes a placeholder a dead server left, from its record
// (parent directory by path and identity, the placeholder's name and
// identity): it reports whether it did; an error means it could not tell,
// and the record is kept for the next server. The caller passes
// sandbox.RemoveRecordedPlaceholder (proc does not know placeholders).
type RemoveRecorded func(parentPath string, parent fsat.ID, name string, id fsat.ID) (bool, error)

// RemoveOrphaned is RemoveRecorded from the handles the watchdog holds
// (sandbox.RemoveOrphanedPlaceholder).
type RemoveOrphaned func(parentfd, fd int, name string, id fsat.ID) (bool, error)

// watchdog is the process's running Watchdog, or nil. Every TreeKiller
// and every sandboxed run of the process reports to it.
var watchdog atomic.Pointer[Watchdog]

// Timing of the watchdog's supervision.
const (
	watchdogWrite   = 2 * time.Second        // a message not taken by then: the watchdog is stuck
	watchdogQuick   = time.Second            // a watchdog that died sooner is restarted after a pause
	watchdogRetries = 5                      // quick deaths in a row before giving up
	watchdogAckWait = 500 * time.Millisecond // Let waits that long for the answer
)

// Watchdog is the server's side of its watchdog process: one per server
// process, started before any TreeKiller (StartWatchdog) and stopped
// after every one was closed (Stop). The process holds one end of a
// socketpair; the server's end is close-on-exec, so the watchdog reads
// end of file exactly when the server is gone. Until then the server
// tells it what it owns: its cgroup directories (handles that also hold
// the directory's lock), in subreaper mode each child (a pidfd), and
// every placeholder its runs hold (handles, the placeholder's lock
// included). A watchdog that dies while the server lives is logged and
// started again, and told the current state.
type Watchdog struct {
	log  *zap.Logger
	args []string    // argv after argv[0]
	rec  *recordFile // nil without a usable state directory

	mu       sync.Mutex
	conn     *net.UnixConn // the running watchdog's socket; nil between runs
	pid      int
	proc     *os.Process // the running watchdog; nil between runs
	stopped  bool
	cgroups  []ownedCgroup
	children map[int]childFDs      // subreaper mode: ours, by pid
	held     map[uint64]heldHandle // borrowed from the runs until Let
	token    uint64
	acks     map[uint64]chan struct{}
	done     chan struct{} // closed when the supervisor returns
}

// ownedCgroup is a cgroup directory the watchdog kills and removes.
type ownedCgroup struct {
	fd      int // our duplicate of the locked handle
	dir     string
	mirrors []string
}

// heldHandle is a placeholder held by a run: the fds stay the run's.
type heldHandle struct {
	parentfd, fd int
	name         string
	id           fsat.ID
}

// StartWatchdog sweeps the records of dead watchdogs in stateDir
// (placeholders they could not remove, with remove), then starts this
// process's watchdog: our own binary (selfExe) as WatchdogName with args
// (its logging flags), in a session of its own. It must be called before
// the process makes any TreeKiller, at most once at a time. The caller
// makes the Watchdog the process's placeholder watch
// (sandbox.WatchPlaceholders) until Stop.
func StartWatchdog(log *zap.Logger, stateDir string, args []string, remove RemoveRecorded) (*Watchdog, error) {
	if log == nil {
		log = zap.NewNop()
	}
	sweepRecords(stateDir, log, remove)
	w := &Watchdog{log: log, args: args, children: map[int]childFDs{},
		held: map[uint64]heldHandle{}, acks: map[uint64]chan struct{}{}, done: make(chan struct{})}
	var err error
	if w.rec, err = createRecords(stateDir); err != nil {
		log.Warn("no record of placeholders: a server killed together with its watchdog leaves them for good", zap.String("dir", stateDir), zap.Error(err))
	}
	cmd, conn, err := w.launch()
	if err != nil {
		w.rec.close(false)
		return nil, err
	}
	w.conn, w.pid, w.proc = conn, cmd.Process.Pid, cmd.Process
	watchdog.Store(w)
	go w.supervise(cmd, conn)
	log.Debug("watchdog started", zap.Int("pid", w.pid))
	return w, nil
}

// launch starts a watchdog process and returns it with our end of its
// socket.
func (w *Watchdog) launch() (*exec.Cmd, *net.UnixConn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "watchdog"), os.NewFile(uintptr(fds[1]), "watchdog")
	defer theirs.Close()
	fc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return nil, nil, err
	}
	conn := fc.(*net.UnixConn)
	args := append([]string{WatchdogName}, w.args...)
	files := []*os.File{theirs} // fd 3
	if w.rec != nil {
		args = append(args, "--records") // fd 4
		files = append(files, w.rec.f)
	}
	cmd := &exec.Cmd{
		Path:       selfExe, // never by path: docs/sandbox.md §4.1
		Args:       args,
		Env:        os.Environ(),
		Stderr:     os.Stderr,
		ExtraFiles: files,
		// Its own session: neither a terminal's signals nor a kill of
		// the server's process group reach it. No parent-death signal.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := reap.StartCmd(cmd); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return cmd, conn, nil
}

// supervise reads the watchdog's answers until its socket ends, reaps
// it, and starts a new one unless the server stops.
func (w *Watchdog) supervise(cmd *exec.Cmd, conn *net.UnixConn) {
	defer close(w.done)
	quick := 0
	for {
		began := time.Now()
		w.readAcks(conn)
		_ = reap.WaitCmd(cmd)
		w.mu.Lock()
		stopped := w.stopped
		w.conn, w.pid, w.proc = nil, 0, nil
		w.mu.Unlock()
		conn.Close()
		if stopped {
			return
		}
		w.log.Warn("the watchdog exited while the server runs; starting it again", zap.Int("pid", cmd.Process.Pid), zap.Stringer("status", cmd.ProcessState))
		if time.Since(began) < watchdogQuick {
			if quick++; quick >= watchdogRetries {
				w.log.Error("the watchdog keeps dying: a SIGKILL of the server will leave its processes and placeholders behind")
				return
			}
			time.Sleep(watchdogQuick)
		} else {
			quick = 0
		}
		var err error
		if cmd, conn, err = w.relaunch(); err != nil {
			if err != net.ErrClosed { // not stopped meanwhile
				w.log.Error("cannot start the watchdog again", zap.Error(err))
			}
			return
		}
	}
}

// relaunch starts a new watchdog and tells it the current state.
func (w *Watchdog) relaunch() (*exec.Cmd, *net.UnixConn, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return nil, nil, net.ErrClosed
	}
	cmd, conn, err := w.launch()
	if err != nil {
		return nil, nil, err
	}
	w.conn, w.pid, w.proc = conn, cmd.Process.Pid, cmd.Process
	for _, c := range w.cgroups {
		w.send(cgroupMsg(c))
	}
	for pid, c := range w.children {
		w.send(childMsg(pid, c))
	}
	for tok, h := range w.held {
		w.send(holdMsg(tok, h))
	}
	return cmd, conn, nil
}

// readAcks wakes the Let calls the watchdog answers, until the socket
// ends; then it wakes them all (a gone watchdog holds nothing).
func (w *Watchdog) readAcks(conn *net.UnixConn) {
	buf := make([]byte, 64)
	for {
		n, _, _, _, err := conn.ReadMsgUnix(buf, nil)
		if err != nil || n == 0 {
			break
		}
		if m, err := decodeMsg(buf[:n], nil); err == nil && m.kind == msgAck {
			w.mu.Lock()
			if ch, ok := w.acks[m.token]; ok {
				delete(w.acks, m.token)
				close(ch)
			}
			w.mu.Unlock()
		}
	}
	w.mu.Lock()
	for tok, ch := range w.acks {
		delete(w.acks, tok)
		close(ch)
	}
	w.mu.Unlock()
}

// send writes m to the running watchdog; w.mu is held. Without one, the
// state is kept for the next. A watchdog that does not take a message
// in time is killed (and started again by the supervisor).
func (w *Watchdog) send(m wireMsg) bool {
	if w.conn == nil {
		return false
	}
	b, oob := m.encode()
	_ = w.conn.SetWriteDeadline(time.Now().Add(watchdogWrite))
	if _, _, err := w.conn.WriteMsgUnix(b, oob, nil); err != nil {
		w.log.Warn("cannot tell the watchdog; killing it to start it again", zap.Int("pid", w.pid), zap.Error(err))
		_ = unix.Kill(w.pid, unix.SIGKILL)
		w.conn.Close()
		w.conn = nil
		return false
	}
	return true
}

// Stop ends the watchdog of a server that stops cleanly, after every
// TreeKiller was closed and every run released, and reaps it. Idempotent.
//
// The watchdog has nothing left to do then, so it is killed rather than
// told goodbye: a goodbye waits until it has finished starting up and
// reads its socket, tens of milliseconds on a loaded host, which every
// short-lived server (each `codex exec run`) paid at its exit.
func (w *Watchdog) Stop() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped = true
	watchdog.CompareAndSwap(w, nil)
	p := w.proc
	w.mu.Unlock()
	if p != nil {
		_ = p.Kill() // by its pidfd: safe against a concurrent reap
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.cgroups {
		_ = unix.Close(c.fd)
	}
	for _, c := range w.children {
		c.close()
	}
	w.cgroups, w.children = nil, nil
	w.rec.close(false)
	w.rec = nil
}

// watchCgroup tells the watchdog of an owned cgroup directory; lockfd is
// the TreeKiller's locked handle on it (duplicated: the watchdog's copy
// keeps the lock, so no other server's sweep takes the directory while
// the watchdog cleans it up).
func (w *Watchdog) watchCgroup(lockfd int, dir string, mirrors []string) {
	fd, err := unix.FcntlInt(uintptr(lockfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		w.log.Warn("the watchdog cannot watch the cgroup directory", zap.String("dir", dir), zap.Error(err))
		return
	}
	c := ownedCgroup{fd: fd, dir: dir, mirrors: mirrors}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		_ = unix.Close(fd)
		return
	}
	w.cgroups = append(w.cgroups, c)
	w.send(cgroupMsg(c))
}

func cgroupMsg(c ownedCgroup) wireMsg {
	return wireMsg{kind: msgCgroup, text: append([]string{c.dir}, c.mirrors...), fds: []int{c.fd}}
}

// watchChild tells the watchdog of a child to kill with its tree if the
// server dies (subreaper mode). pid must be our child, not yet reaped;
// pidfd (-1: opened here) and master (-1: none) stay the caller's.
func (w *Watchdog) watchChild(pid, pidfd, master int) {
	var c childFDs
	var err error
	if pidfd >= 0 {
		c.pidfd, err = unix.FcntlInt(uintptr(pidfd), unix.F_DUPFD_CLOEXEC, 0)
	} else if c.pidfd, err = unix.PidfdOpen(pid, 0); err == nil {
		unix.CloseOnExec(c.pidfd)
	}
	if err != nil {
		return // too old a kernel, or gone: the session walk still finds its group
	}
	c.master = -1
	if master >= 0 {
		if c.master, err = unix.FcntlInt(uintptr(master), unix.F_DUPFD_CLOEXEC, 0); err != nil {
			c.master = -1
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.children == nil {
		c.close()
		return
	}
	if old, ok := w.children[pid]; ok {
		old.close()
	}
	w.children[pid] = c
	w.send(childMsg(pid, c))
}

// childFDs are what the watchdog gets of a child: its pidfd and its
// terminal's master side (-1: none).
type childFDs struct{ pidfd, master int }

func (c childFDs) close() {
	_ = unix.Close(c.pidfd)
	if c.master >= 0 {
		_ = unix.Close(c.master)
	}
}

func childMsg(pid int, c childFDs) wireMsg {
	m := wireMsg{kind: msgChild, token: uint64(pid), fds: []int{c.pidfd}}
	if c.master >= 0 {
		m.fds = append(m.fds, c.master)
	}
	return m
}

// forgetChild: the child pid was reaped.
func (w *Watchdog) forgetChild(pid int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.children[pid]
	if !ok {
		return
	}
	delete(w.children, pid)
	c.close()
	w.send(wireMsg{kind: msgForget, token: uint64(pid)})
}

// Hold implements sandbox.PlaceholderWatch: the watchdog gets its own
// references to the placeholder's parent and to the placeholder's open
// file description, whose shared lock thus stays held until the
// watchdog has removed it, or was told to Let it go.
// It records the placeholder first, so that the next server finds it if
// the server and its watchdog die together.
func (w *Watchdog) Hold(parentfd, fd int, path string, id fsat.ID) uint64 {
	parent, err := fsat.Stat(parentfd)
	if err != nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return 0
	}
	w.token++
	h := heldHandle{parentfd: parentfd, fd: fd, name: filepath.Base(path), id: id}
	w.rec.add(w.token, filepath.Dir(path), parent, h.name, id)
	w.held[w.token] = h
	w.send(holdMsg(w.token, h))
	return w.token
}

func holdMsg(tok uint64, h heldHandle) wireMsg {
	return wireMsg{kind: msgHold, token: tok, id: h.id, text: []string{h.name}, fds: []int{h.parentfd, h.fd}}
}

// Let implements sandbox.PlaceholderWatch: it returns once the watchdog
// closed its references (or is gone, or did not answer in time), so that
// the run's removal of the placeholder sees only the other runs' locks.
func (w *Watchdog) Let(token uint64) {
	if token == 0 {
		return
	}
	ch := make(chan struct{})
	w.mu.Lock()
	delete(w.held, token)
	w.acks[token] = ch
	rec := w.rec
	if !w.send(wireMsg{kind: msgLet, token: token}) {
		delete(w.acks, token)
		w.mu.Unlock()
		rec.remove(token)
		return
	}
	w.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(watchdogAckWait):
		w.mu.Lock()
		delete(w.acks, token)
		w.mu.Unlock()
		w.log.Warn("the watchdog did not let a placeholder go in time")
	}
	rec.remove(token)
}
