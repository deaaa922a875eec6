//go:build linux && (amd64 || arm64)

package ptrace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/shelltool/escalate"
)

// Config is what a Session needs besides its root process.
type Config struct {
	// Decider judges every exec that will succeed; required. It is asked
	// from worker goroutines, never from the tracer thread, and may block
	// (the tracee stays stopped meanwhile).
	Decider escalate.Decider
	// Escalator runs the escalated programs; required. The Session never
	// calls KillAll: the owner of the Escalator does, after Close.
	Escalator *escalate.Escalator
	// Logger receives the session's logs; nil means none.
	Logger *zap.Logger
}

// QuickDecider is an optional interface of Config.Decider. DecideQuick
// answers without blocking when it can (ok true), with the decision
// Decide would return; the tracer thread then carries out a Run at once,
// without a worker. When ok is false, Decide is asked on a worker.
type QuickDecider interface {
	DecideQuick(r escalate.Request) (d escalate.Decision, ok bool)
}

// SpawnFunc starts the root process of a Session and returns its pid. It
// runs on the tracer thread, so the root is that thread's child (its
// parent-death signal fires when the tracer goes away). The root must
// wait for the sync byte (sandbox.Plan.TraceExecFD) before it forks or
// execs.
type SpawnFunc func() (pid int, err error)

// Session traces one process tree: the root that its SpawnFunc started
// and every thread and process that descends from it. Create it with
// Start; its methods are safe for concurrent use. Close must be called
// (it is what stops the tracer thread when tracees outlive the root).
type Session struct {
	cfg Config
	log *zap.Logger

	ctx    context.Context    // the workers' context
	cancel context.CancelFunc // cancels ctx: pending decisions end with Deny

	results chan result // worker → tracer: what to do with a stopped tracee
	kill    sync.Once
	killing atomic.Bool // set by Kill: every tracee, present and future, is killed

	mu      sync.Mutex
	tids    map[int]struct{} // guarded by mu: the tracked tids, for Kill
	exited  chan struct{}    // closed when the root is reaped
	code    int              // root's status; written before exited is closed
	done    chan struct{}    // closed when the tracer thread is finished
	workers sync.WaitGroup
	pid     int // root pid; written before Start returns
}

// Start starts a tracer thread, runs spawn on it, seizes every thread of
// the root, and only then writes one byte to sync (which it closes in
// every case), so that nothing the root runs escapes the tracer. ctx
// bounds the workers (decisions and escalations); cancelling it does not
// kill the tracees (Kill does).
//
// The error is spawn's, or that of seizing the root; in the latter case
// the root is killed and reaped before Start returns.
func Start(ctx context.Context, cfg Config, spawn SpawnFunc, sync *os.File) (*Session, error) {
	if cfg.Decider == nil || cfg.Escalator == nil {
		sync.Close()
		return nil, errors.New("ptrace: Decider and Escalator are required")
	}
	s := &Session{
		cfg: cfg, log: cfg.Logger,
		results: make(chan result), tids: map[int]struct{}{},
		exited: make(chan struct{}), done: make(chan struct{}),
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	started := make(chan error, 1)
	go s.run(spawn, sync, started)
	if err := <-started; err != nil {
		<-s.done
		return nil, err
	}
	return s, nil
}

// Pid is the root's pid.
func (s *Session) Pid() int { return s.pid }

// Exited is closed when the root process has exited (and is reaped).
func (s *Session) Exited() <-chan struct{} { return s.exited }

// ExitCode is the root's status: its exit code, or 128+N for a death by
// signal N. Valid once Exited is closed.
func (s *Session) ExitCode() int {
	<-s.exited
	return s.code
}

// Kill kills every tracee (SIGKILL), now and as they appear, and ends the
// pending decisions and escalations. It does not wait.
func (s *Session) Kill() {
	s.kill.Do(func() {
		s.cancel()
		s.killing.Store(true)
		s.mu.Lock()
		for tid := range s.tids {
			_ = unix.Kill(tid, unix.SIGKILL)
		}
		s.mu.Unlock()
	})
}

// Close kills what is left of the tree (Kill) and waits until the tracer
// thread has seen every tracee go and every worker has returned.
func (s *Session) Close() {
	s.Kill()
	<-s.done
}

// run is the tracer goroutine. It never unlocks its thread: when it
// returns, the thread exits, and PTRACE_O_EXITKILL and the root's
// parent-death signal take down anything still attached.
func (s *Session) run(spawn SpawnFunc, syncFile *os.File, started chan<- error) {
	runtime.LockOSThread()
	if tid := unix.Gettid(); tid == unix.Getpid() || hasChildren(tid) {
		// The tracer waits for any child of its thread: it must not be
		// the main thread (orphans of a subreaper server are re-parented
		// to it) nor a thread that forked other children of the server.
		// Keep this one busy (so the new goroutine cannot get it) while
		// another thread traces.
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.run(spawn, syncFile, started)
		}()
		<-done
		runtime.UnlockOSThread()
		return
	}
	defer close(s.done)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGCHLD)
	defer signal.Stop(sigs)

	pid, err := spawn()
	if err != nil {
		syncFile.Close()
		s.cancel()
		close(s.exited)
		started <- err
		return
	}
	s.pid = pid
	t := newTracer(s, pid)
	err = t.seizeAll(pid)
	if err == nil {
		// A failed write means the root is gone or refused to run before
		// reading it: nothing ran untraced, and its exit comes next.
		if _, werr := syncFile.Write([]byte{1}); werr != nil {
			s.log.Debug("ptrace: sync byte not delivered", zap.Int("pid", pid), zap.Error(werr))
		}
	}
	syncFile.Close()
	if err != nil {
		s.log.Error("ptrace: cannot trace the root; killing it", zap.Int("pid", pid), zap.Error(err))
		_ = unix.Kill(pid, unix.SIGKILL)
		s.Kill()
		t.loop(sigs)
		t.rootLost()
		s.finish()
		started <- err
		return
	}
	started <- nil
	t.loop(sigs)
	t.rootLost()
	s.finish()
}

// hasChildren reports whether thread tid of this process has children
// (zombies included). Without the children file (CONFIG_PROC_CHILDREN) it
// cannot tell and answers false.
func hasChildren(tid int) bool {
	data, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/children")
	return err == nil && len(bytes.TrimSpace(data)) > 0
}

// finish waits for the workers after the last tracee is gone, dropping
// what they still post.
func (s *Session) finish() {
	s.cancel()
	idle := make(chan struct{})
	go func() {
		s.workers.Wait()
		close(idle)
	}()
	for {
		select {
		case <-s.results:
		case <-idle:
			return
		}
	}
}

// post hands a worker's result to the tracer thread.
func (s *Session) post(r result) {
	s.results <- r
}
