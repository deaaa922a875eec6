//go:build linux && (amd64 || arm64)

package ptrace

import (
	"context"
	"errors"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// handle acts on one state change of tr.
func (t *tracer) handle(tr *tracee, ws unix.WaitStatus) {
	switch {
	case ws.Exited() || ws.Signaled():
		t.gone(tr, ws)
		return
	case !ws.Stopped():
		return // WCONTINUED is not asked for
	}
	sig := ws.StopSignal()
	event := int(ws) >> 16
	switch {
	case event == unix.PTRACE_EVENT_SECCOMP:
		t.onExecStop(tr)
	case event == unix.PTRACE_EVENT_FORK || event == unix.PTRACE_EVENT_VFORK || event == unix.PTRACE_EVENT_CLONE:
		t.onFork(tr)
	case event == unix.PTRACE_EVENT_EXEC:
		t.onExec(tr)
	case event == unix.PTRACE_EVENT_STOP:
		switch {
		case tr.fresh:
			tr.fresh = false
			t.resume(tr.tid, 0)
		case sig == unix.SIGSTOP || sig == unix.SIGTSTP || sig == unix.SIGTTIN || sig == unix.SIGTTOU:
			// A group stop: stay stopped until SIGCONT, without
			// blocking the tracer (PTRACE_LISTEN).
			if err := listen(tr.tid); err != nil && !errors.Is(err, unix.ESRCH) {
				t.s.log.Warn("ptrace: listen", zap.Int("tid", tr.tid), zap.Error(err))
			}
		default:
			t.resume(tr.tid, 0)
		}
	default:
		// A signal-delivery stop: deliver the signal as if untraced.
		t.resume(tr.tid, sig)
	}
}

// gone records the end of tr: the root's status, and its worker ended.
func (t *tracer) gone(tr *tracee, ws unix.WaitStatus) {
	t.forget(tr.tid)
	if tr.tid != t.root {
		return
	}
	if ws.Signaled() {
		t.s.code = 128 + int(ws.Signal())
	} else {
		t.s.code = ws.ExitStatus()
	}
	close(t.s.exited)
}

// rootLost ends a session whose root's exit was never seen (someone else
// reaped it: a subreaper's orphan reaper waiting on the server's
// children, which must not run beside Sessions): its status is 255
// rather than a wait that never ends.
func (t *tracer) rootLost() {
	select {
	case <-t.s.exited:
	default:
		t.s.log.Error("ptrace: the root's exit was taken by another wait", zap.Int("pid", t.root))
		t.s.code = 255
		close(t.s.exited)
	}
}

// resume continues a stopped tracee with sig (0: none). ESRCH (killed
// meanwhile) is expected; its exit comes next.
func (t *tracer) resume(tid int, sig unix.Signal) {
	if err := unix.PtraceCont(tid, int(sig)); err != nil && !errors.Is(err, unix.ESRCH) {
		t.s.log.Warn("ptrace: cont", zap.Int("tid", tid), zap.Error(err))
	}
}

// onFork tracks the new thread or process of a fork, vfork or clone event
// and resumes the parent. The child inherits whether it runs the helper.
func (t *tracer) onFork(tr *tracee) {
	msg, err := unix.PtraceGetEventMsg(tr.tid)
	if err == nil {
		t.add(int(msg), true, tr.helper)
	}
	t.resume(tr.tid, 0)
}

// apply carries out a worker's result on the tracee it is for, if that
// tracee is still in the stop the result answers.
func (t *tracer) apply(r result) {
	tr, ok := t.tracees[r.tid]
	if !ok || tr.gen != r.gen || tr.cancel == nil {
		return
	}
	tr.cancel()
	tr.cancel = nil
	switch {
	case r.resume:
		tr.judged = r.judged
		t.resume(tr.tid, 0)
	case r.exit:
		if err := rewriteExitGroup(tr.tid, r.code); err != nil {
			// Fail closed: the exec must not run.
			if !errors.Is(err, unix.ESRCH) {
				t.s.log.Error("ptrace: rewriting into exit_group; killing", zap.Int("tid", tr.tid), zap.Error(err))
			}
			_ = unix.Kill(tr.tid, unix.SIGKILL)
			return
		}
		t.resume(tr.tid, 0)
	case r.kill:
		_ = unix.Kill(tr.tid, unix.SIGKILL)
	}
}

// startWorker runs work for the stopped tracee tr on a worker goroutine,
// which posts exactly one result for the current generation.
func (t *tracer) startWorker(tr *tracee, work func(ctx context.Context) result) {
	t.gen++
	tr.gen = t.gen
	ctx, cancel := context.WithCancel(t.s.ctx)
	tr.cancel = cancel
	tid, gen := tr.tid, tr.gen
	t.outstanding++
	t.s.workers.Add(1)
	go func() {
		defer t.s.workers.Done()
		r := work(ctx)
		r.tid, r.gen = tid, gen
		t.s.post(r)
	}()
}
