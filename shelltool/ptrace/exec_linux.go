//go:build linux && (amd64 || arm64)

package ptrace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/shelltool/escalate"
)

// onExecStop decides an execve or execveat at its seccomp stop.
func (t *tracer) onExecStop(tr *tracee) {
	tr.judged, tr.early = nil, false
	si, err := getSyscallInfo(tr.tid)
	if err != nil {
		if !errors.Is(err, unix.ESRCH) {
			t.s.log.Error("ptrace: reading the exec; killing", zap.Int("tid", tr.tid), zap.Error(err))
			_ = unix.Kill(tr.tid, unix.SIGKILL)
		}
		return
	}
	if tr.helper || (si.nr != sysExecve && si.nr != sysExecveat) {
		tr.helperExec = tr.helper
		t.resume(tr.tid, 0) // the helper execs the plan's command
		return
	}
	call, err := readExec(tr.tid, si)
	if errors.Is(err, errTooLarge) {
		reason := err.Error()
		t.startWorker(tr, func(ctx context.Context) result {
			return t.s.deny(ctx, tr.tid, escalate.Decision{Action: escalate.Deny, Reason: &reason})
		})
		return
	}
	if err != nil {
		// Unreadable arguments: the kernel fails with EFAULT too. If it
		// succeeds after all, the exec event judges what ran.
		t.resume(tr.tid, 0)
		return
	}
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(tr.tid) + "/cwd")
	if err != nil {
		t.resume(tr.tid, 0) // dying; nothing will run
		return
	}
	tg, ok := resolve(tr.tid, call, cwd)
	if !ok {
		t.resume(tr.tid, 0) // bound to fail: let the kernel say so
		return
	}
	req := escalate.Request{File: tg.file, Argv: call.argv, Workdir: cwd, Env: envMap(call.envp),
		Exe: tg.exe, Open: opener(tr.tid)}
	d, quick := t.quick(req)
	if quick && d.Action == escalate.Run && d.Note == "" {
		tg.release()
		tr.judged = &tg
		t.resume(tr.tid, 0)
		return
	}
	t.startWorker(tr, func(ctx context.Context) result {
		if !quick {
			d = t.s.cfg.Decider.Decide(ctx, req)
		}
		tg.release()
		defer d.Close()
		return t.s.act(ctx, tr.tid, req, d, &tg)
	})
}

// quick asks the Decider for an answer without blocking, if it can give
// one (QuickDecider).
func (t *tracer) quick(req escalate.Request) (escalate.Decision, bool) {
	if q, ok := t.s.cfg.Decider.(QuickDecider); ok {
		return q.DecideQuick(req)
	}
	return escalate.Decision{}, false
}

// act carries out the decision d on req for the stopped tid (the tracer
// thread then resumes it or rewrites its syscall).
func (s *Session) act(ctx context.Context, tid int, req escalate.Request, d escalate.Decision, tg *target) result {
	s.log.Debug("ptrace: decision", zap.Int("tid", tid), zap.String("file", req.File),
		zap.Strings("argv", req.Argv), zap.Int("action", int(d.Action)))
	switch {
	case d.Action == escalate.Run:
		if d.Note != "" {
			s.tell(ctx, tid, d.Note+"\n")
		}
		return result{resume: true, judged: tg}
	case d.Action == escalate.Escalate && d.Program != nil:
		return result{exit: true, code: s.escalate(ctx, tid, req, d.Program)}
	case d.Action == escalate.Escalate:
		reason := "no judged program to run" // fail closed
		d = escalate.Decision{Action: escalate.Deny, Reason: &reason}
	}
	return s.deny(ctx, tid, d)
}

// tell writes msg on tid's stderr.
func (s *Session) tell(ctx context.Context, tid int, msg string) {
	files, err := takeFDs(tid, 2)
	if err != nil {
		s.log.Debug("ptrace: no stderr for a message", zap.Int("tid", tid), zap.Error(err))
		return
	}
	if files[0] != nil {
		writeAll(ctx, files[0], msg)
	}
	closeAll(files)
}

// deny writes the Deny message on tid's stderr and ends the exec with
// exit code 1.
func (s *Session) deny(ctx context.Context, tid int, d escalate.Decision) result {
	msg := "Execution denied\n"
	if d.Reason != nil {
		msg = "Execution denied: " + *d.Reason + "\n"
	}
	s.tell(ctx, tid, msg)
	return result{exit: true, code: 1}
}

// escalate runs req outside the sandbox on tid's fds 0-2 and returns the
// code the exec ends with: the program's, 128+N for its death by signal
// N, 1 when it could not start (the error then goes to tid's stderr).
// Meanwhile SIGHUP, SIGINT and SIGTERM sent to the stopped tid are
// forwarded to the program's process group (forwardSignals).
func (s *Session) escalate(ctx context.Context, tid int, req escalate.Request, prog *escalate.Program) int {
	files, err := takeFDs(tid, 0, 1, 2)
	if err != nil {
		s.log.Warn("ptrace: taking the tracee's descriptors", zap.Int("tid", tid), zap.Error(err))
		return 1
	}
	defer closeAll(files)
	fwdCtx, stopForward := context.WithCancel(ctx)
	forwarding := make(chan struct{})
	go func() {
		defer close(forwarding)
		forwardSignals(fwdCtx, tid, req, files)
	}()
	code, err := s.cfg.Escalator.Run(ctx, req, prog, files)
	stopForward()
	<-forwarding
	if err != nil {
		if files[2] != nil {
			writeAll(ctx, files[2], "Error: "+err.Error()+"\n")
		}
		return 1
	}
	return code
}

// onExec verifies, at PTRACE_EVENT_EXEC (new image loaded, not one
// instruction run, other threads gone), that what the kernel executed is
// what was judged; otherwise it judges what ran, and kills it unless Run.
func (t *tracer) onExec(tr *tracee) {
	if msg, err := unix.PtraceGetEventMsg(tr.tid); err == nil && int(msg) != tr.tid {
		// A non-leader thread exec'd: it takes the leader's tid.
		if old, ok := t.tracees[int(msg)]; ok {
			if tr.cancel != nil {
				tr.cancel()
			}
			tr.judged, tr.helper, tr.helperExec, tr.cancel = old.judged, old.helper, old.helperExec, nil
			if old.cancel != nil {
				old.cancel()
			}
			delete(t.tracees, int(msg))
		}
	}
	if tr.helper {
		// The plan's command replaces the helper; or the root's own start,
		// seen when the seize beat the end of its exec.
		tr.helper = !tr.helperExec
		tr.helperExec, tr.judged = false, nil
		t.resume(tr.tid, 0)
		return
	}
	judged := tr.judged
	tr.judged = nil
	proc := "/proc/" + strconv.Itoa(tr.tid)
	argv, aerr := readNulList(proc + "/cmdline")
	img, ierr := statVersion(proc + "/exe")
	if aerr == nil && ierr == nil && judged.matches(img, argv) {
		t.resume(tr.tid, 0)
		return
	}
	req, err := ranRequest(proc, argv)
	if err != nil || aerr != nil {
		t.s.log.Warn("ptrace: cannot tell what was executed; killing", zap.Int("tid", tr.tid))
		_ = unix.Kill(tr.tid, unix.SIGKILL)
		return
	}
	t.s.log.Info("ptrace: exec differs from the judged one; judging again",
		zap.Int("tid", tr.tid), zap.String("file", req.File), zap.Strings("argv", argv))
	if d, ok := t.quick(req); ok {
		req.Exe.Close()
		d.Close()
		if d.Action == escalate.Run {
			t.resume(tr.tid, 0)
		} else {
			_ = unix.Kill(tr.tid, unix.SIGKILL)
		}
		return
	}
	t.startWorker(tr, func(ctx context.Context) result {
		d := t.s.cfg.Decider.Decide(ctx, req)
		req.Exe.Close()
		d.Close()
		if d.Action == escalate.Run {
			return result{resume: true}
		}
		return result{kill: true}
	})
}

// matches reports whether an exec of tg explains the new image img with
// argv: the image is the version judged (the file itself, or the end of a
// script's interpreter chain, unchanged since the decision), and argv is
// the exec's, or, for a script, the interpreter's with the script's name
// and arguments at the end.
func (tg *target) matches(img fileVersion, argv []string) bool {
	if tg == nil || tg.image == (fileVersion{}) || img != tg.image {
		return false
	}
	if !tg.script {
		return img.id == tg.id && slices.Equal(argv, tg.argv)
	}
	rest := tg.argv
	if len(rest) > 0 {
		rest = rest[1:]
	}
	n := len(argv) - len(rest) - 1
	return n >= 1 && argv[n] == tg.passed && slices.Equal(argv[n+1:], rest)
}

// ranRequest is the Request for the image a process now runs.
func ranRequest(proc string, argv []string) (escalate.Request, error) {
	exe, err := os.Readlink(proc + "/exe")
	if err != nil {
		return escalate.Request{}, err
	}
	cwd, err := os.Readlink(proc + "/cwd")
	if err != nil {
		return escalate.Request{}, err
	}
	env, _ := readNulList(proc + "/environ")
	fd, err := unix.Open(proc+"/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return escalate.Request{}, &os.PathError{Op: "open", Path: proc + "/exe", Err: err}
	}
	tid, _ := strconv.Atoi(strings.TrimPrefix(proc, "/proc/"))
	return escalate.Request{File: strings.TrimSuffix(exe, " (deleted)"), Argv: argv, Workdir: cwd, Env: envMap(env),
		Exe: os.NewFile(uintptr(fd), exe), Open: opener(tid)}, nil
}

// readNulList reads a NUL-separated list (cmdline, environ).
func readNulList(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimSuffix(data, []byte{0})
	if len(data) == 0 {
		return []string{}, nil
	}
	return strings.Split(string(data), "\x00"), nil
}

// envMap turns KEY=VALUE entries into the Request's map; entries without
// "=" are dropped, and the first of duplicate keys wins (getenv's view).
func envMap(envp []string) map[string]string {
	m := make(map[string]string, len(envp))
	for _, kv := range envp {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, dup := m[k]; !dup {
			m[k] = v
		}
	}
	return m
}
