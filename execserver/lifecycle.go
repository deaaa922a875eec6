package execserver

// The lifecycle funnel of a process: every reason to end it (terminate,
// start cancelled, TTL expiry, connection close, shutdown) only cancels
// the entry's context with its cause; one goroutine per process, the
// watcher, decides between kill and reaped, performs every kill, logs the
// cause once, and publishes exited and closed in order.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/sandbox"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Causes of the end of a process. An entry's context is cancelled with one
// of them, directly (terminate) or through its session's context (the
// others); errors.Is matches them.
var (
	errTerminated     = errors.New("process/terminate")
	errStartCancelled = errors.New("terminated while starting")
	errSessionExpired = errors.New("detached session expired")
	errSessionEvicted = errors.New("empty detached session ended at the session limit")
	errConnClosed     = errors.New("connection closed (session TTL 0)")
	errShutdown       = errors.New("server shutting down")
	errSessionEnded   = errors.New("session/end")
	errProxyFailed    = errors.New("network proxy failed")
)

// gracefulTerminate is the cause of a graceful process/terminate: SIGTERM
// to the process group now, SIGKILL to the tree after grace (
// docs/protocol.md §10.3). It matches errTerminated, or errShutdown for
// the drain of a server that stops (drain.go).
type gracefulTerminate struct {
	grace time.Duration
	drain bool
}

func (g *gracefulTerminate) Error() string {
	if g.drain {
		return "server shutting down (graceful)"
	}
	return "process/terminate (graceful)"
}

func (g *gracefulTerminate) Is(target error) bool {
	if g.drain {
		return target == errShutdown
	}
	return target == errTerminated
}

// terminateCause returns the cause of a process/terminate.
func terminateCause(graceful bool, grace time.Duration) error {
	if graceful {
		return &gracefulTerminate{grace: grace}
	}
	return errTerminated
}

// stop asks the watcher of e to end the process for cause; it never blocks
// and never signals by itself. The first cause cancels e.ctx; a later one
// (a second process/terminate, which may escalate a graceful one) goes to
// e.later.
func (e *entry) stop(cause error) {
	e.cancel(cause)
	if context.Cause(e.ctx) != cause {
		e.later.put(cause)
	}
}

// mailbox hands the causes that follow the first to the watcher. The zero
// value is not usable: ready needs a buffer of one (newMailbox).
type mailbox struct {
	mu      sync.Mutex
	pending error         // guarded by mu: the cause not yet taken, nil if none
	ready   chan struct{} // signalled after each put
}

func newMailbox() mailbox { return mailbox{ready: make(chan struct{}, 1)} }

// put records cause. A pending immediate kill is never replaced; a pending
// graceful request is replaced by any later cause.
func (m *mailbox) put(cause error) {
	m.mu.Lock()
	var g *gracefulTerminate
	if m.pending == nil || errors.As(m.pending, &g) {
		m.pending = cause
	}
	m.mu.Unlock()
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

// take returns and clears the pending cause.
func (m *mailbox) take() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.pending
	m.pending = nil
	return c
}

// watcher is the state of the goroutine that owns the end of one process.
// Only that goroutine touches it.
type watcher struct {
	e *entry
	p *proc.Process

	first   <-chan struct{}  // e.ctx.Done() until the first cause was acted on
	session <-chan struct{}  // the session's end, watched after a graceful first cause
	grace   *time.Timer      // the pending SIGKILL of a graceful terminate, or nil
	graceC  <-chan time.Time // grace.C while armed
	killed  bool             // the tree was SIGKILLed: at most once
	cause   error            // the first cause acted on, logged once; nil if none
}

// watch publishes the exit and the close of the process, in that order,
// and then schedules the removal of the entry, acting on every cause that
// arrives meanwhile. It runs on a goroutine owned by the registry.
//
// The exit is published once the child was reaped and what it wrote
// before was delivered (proc.Process.ExitFlushed), so the natural order
// (output, exited, closed) holds without waiting for descendants that keep
// the streams open, and a sandbox denial is judged on the whole output.
func (e *entry) watch(p *proc.Process) {
	w := &watcher{e: e, p: p, first: e.ctx.Done()}
	defer e.cancel(nil) // releases e.ctx from its session's
	defer w.stopGrace()
	w.until(p.ExitFlushed())
	exitedAt := time.Now()
	<-e.started
	code := p.ExitCode()
	denied := false
	if e.sandboxed {
		stdout, stderr := e.log.retainedText()
		denied = sandbox.LikelyDenied(code, stdout, stderr) // docs/protocol.md §8.4
		if denied {
			e.sess.reg.cfg.Metrics.SandboxDenied()
		}
	}
	var exited []byte
	if chanClosed(p.OutputDone()) || p.OutputEnding() {
		// The output has ended too, or only its EOF is left to read (as
		// for most terminated processes): exited is held back and leaves
		// with closed, in one write.
		w.until(p.OutputDone())
		exited = e.markExited(code, denied)
	} else {
		e.emitExited(code, denied)
		w.until(p.OutputDone())
	}
	e.logEnded(p, exitedAt.Sub(e.startedAt), denied, w.cause)
	e.finish(p, exited)
}

// logEnded logs the end of the process at info: its exit code, the
// signal that killed it if one did, how long it ran (from the request),
// the bytes it wrote, and the server's cause for ending it, if any.
func (e *entry) logEnded(p *proc.Process, ran time.Duration, denied bool, cause error) {
	fields := endFields(kindProcessStart, e.id, p, p.ExitCode(), ran, e.bytesOut.Load())
	if denied {
		fields = append(fields, zap.Bool("sandbox_denied", true))
	}
	if cause != nil {
		fields = append(fields, zap.String("cause", cause.Error()))
	}
	e.sess.log.Info("process ended", fields...)
}

// until acts on causes and on the grace timer until done is closed.
func (w *watcher) until(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-w.first:
			w.actFirst()
		case <-w.session:
			w.session = nil
			w.act(context.Cause(w.e.sess.ctx))
		case <-w.e.later.ready:
			// A later cause is put only after e.ctx was cancelled, but
			// select may pick this case first: the first cause goes first.
			if w.first != nil {
				w.actFirst()
			}
			if cause := w.e.later.take(); cause != nil {
				w.act(cause)
			}
		case <-w.graceC:
			w.graceC = nil
			w.kill()
		}
	}
}

// actFirst acts on the cause e.ctx was cancelled with; after a graceful
// one the session's end is watched too.
func (w *watcher) actFirst() {
	w.first = nil
	cause := context.Cause(w.e.ctx)
	w.act(cause)
	var g *gracefulTerminate
	if errors.As(cause, &g) {
		w.session = w.e.sess.ctx.Done()
	}
}

// act ends the process for cause: a graceful terminate sends SIGTERM to the
// group and (re)arms the SIGKILL after its grace; any other cause kills
// the tree at once. The first cause is logged now at debug, and again in
// the info line of the process's end.
func (w *watcher) act(cause error) {
	if w.cause == nil {
		w.cause = cause
		w.e.sess.log.Debug("ending process", zap.String("process", w.e.id), zap.String("cause", cause.Error()))
	}
	var g *gracefulTerminate
	if !errors.As(cause, &g) {
		w.kill()
		return
	}
	if w.killed {
		return
	}
	_ = w.p.Signal(unix.SIGTERM)
	w.stopGrace()
	if g.drain {
		// The drain kills what is left when its grace ends, and then
		// waits for those exits; a timer of our own racing it would make
		// the process look long gone to the drain (drain.go).
		return
	}
	w.grace = time.NewTimer(g.grace)
	w.graceC = w.grace.C
}

// kill sends SIGKILL to the whole tree, once.
func (w *watcher) kill() {
	if w.killed {
		return
	}
	w.killed = true
	w.stopGrace()
	if err := w.p.Kill(); err != nil {
		w.e.sess.log.Debug("kill", zap.String("process", w.e.id), zap.Error(err))
	}
}

func (w *watcher) stopGrace() {
	if w.grace != nil {
		w.grace.Stop()
		w.grace, w.graceC = nil, nil
	}
}

// finish closes the entry once the output ended: placeholders released,
// the live count and closed published (with exited, if the caller held it
// back: see markExited), the process released, and the entry kept for
// reads for ExitedRetention unless the session ended.
func (e *entry) finish(p *proc.Process, exited []byte) {
	// The helper is gone: drop the placeholders and remove leftovers
	// before the client learns of the close. The proxy ends with the
	// command (docs/sandbox.md §9).
	e.protect.Release()
	e.proxy.close()
	// The process no longer counts against MaxProcesses once it is closed;
	// do it before the client can learn of the close.
	s := e.sess
	s.mu.Lock()
	s.live--
	s.mu.Unlock()
	s.reg.cfg.Metrics.ProcessClosed()
	e.emitClosed(exited)
	// What the tree left running (`cmd &`) lives as long as the session;
	// adopted before procDown, so that a drain that sees no process left
	// finds it among the session's leftovers.
	s.adopt(p.CloseLeftovers())
	s.reg.procDown() // after the close reached the client: the drain waits for it
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unfinished--
	s.noteIdle()
	if !s.ended {
		e.retain = time.AfterFunc(s.reg.cfg.ExitedRetention, func() { s.remove(e) })
		return
	}
	// Killed at expiry or shutdown, or at the drop with --session-ttl 0:
	// nobody can resume the session to read this process, so keeping it
	// (and the session with it) for ExitedRetention only holds memory:
	// about 7 KB per connect → start → drop cycle. end drops the entries
	// closed before.
	if s.procs[e.id] == e {
		delete(s.procs, e.id)
	}
}
