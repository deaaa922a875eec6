package shelltool

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
	"github.com/codexec/codex/shelltool/ptrace"
)

// DefaultTracedBash is the shell of the ptrace interceptor: the system's
// own, unpatched.
const DefaultTracedBash = "/bin/bash"

// TracedRunner runs shell calls with kernel-level exec interception (see
// docs/shell-tool.md §10): Bash (any build; or another POSIX shell, run with -c instead of
// --norc -c when the call is not a login one) under our sandbox helper, which traps every
// execve and execveat of the call for a ptrace Session of this server;
// each is judged by the call's Decider (the same decision path as the
// wrapper's). Without a sandbox (c.Plan nil) the helper still runs, with
// its base filter only (sandbox.Plan.Unsandboxed), so that execs are
// intercepted in every mode.
// Stdin is /dev/null; stdout and stderr share one pipe. The zero value is
// not usable: Bash is required. Safe for concurrent use.
//
// When Bash exits, what it left running (background jobs) is killed with
// the call: a traced process cannot outlive its tracer, and with Tree the
// call's cgroup leaf, which also holds the escalated programs and what
// they left, is killed whole.
type TracedRunner struct {
	// Bash is the path of the shell.
	Bash string
	// Env is the base environment of the command; nil means the server's.
	// The wrapper protocol's variables are removed from it.
	Env []string
	// Grace is the output grace after Bash exits; 0 means DefaultGrace.
	Grace time.Duration
	// Logger receives the runner's logs; nil means none.
	Logger *zap.Logger
	// Tree makes each call's cgroup leaf (docs/shell-tool.md §4.1); nil:
	// calls run without one.
	Tree *proc.TreeKiller
}

var _ Runner = (*TracedRunner)(nil)

// Run implements Runner.
func (b *TracedRunner) Run(ctx context.Context, c *Call) (Result, error) {
	log := b.Logger
	if log == nil {
		log = zap.NewNop()
	}
	c, release := guardPlaceholders(c, log)
	defer release()
	leaf := callLeaf(b.Tree, log)
	defer leaf.Release() // last: what the session and the escalator left, daemons included
	w, err := sandbox.Wrap(b.plan(c))
	if err != nil {
		return Result{}, err
	}
	defer dropCallProxy(&w) // an error before serveCallProxy
	syncR, syncW, err := os.Pipe()
	if err != nil {
		closeFiles(w.ExtraFiles)
		return Result{}, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		closeFiles(append(w.ExtraFiles, syncR, syncW))
		return Result{}, err
	}
	defer pr.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		closeFiles(append(w.ExtraFiles, syncR, syncW, pw))
		return Result{}, err
	}
	attr := &syscall.ProcAttr{Files: []uintptr{null.Fd(), pw.Fd(), pw.Fd()}, Sys: &syscall.SysProcAttr{Setsid: true}}
	path, argv := w.ApplyTo(attr)
	attr.Files = append(attr.Files, syncR.Fd())
	esc := escalate.NewPlacedEscalator(log, leaf)
	defer esc.KillAll()
	sess, err := ptrace.Start(ctx, ptrace.Config{Decider: c.Decider, Escalator: esc, Logger: log},
		func() (int, error) {
			return leaf.Fork(attr.Sys, func() (int, error) { return syscall.ForkExec(path, argv, attr) })
		}, syncW)
	closeFiles(append(slices.Clone(w.ExtraFiles), syncR, pw, null))
	proxy, perr := serveCallProxy(ctx, &w, c, log) // also after a failed start
	if proxy != nil {
		defer proxy.Close() // when the call is done
	}
	if err != nil {
		return Result{}, rpc.Errorf(rpc.CodeInternalError, "failed to start %s: %v", b.Bash, err)
	}
	defer sess.Close()
	kill := func() {
		_ = leaf.Kill() // all at once, forks in flight included
		sess.Kill()
		esc.KillAll()
		<-sess.Exited()
	}
	if perr != nil {
		kill()
		return Result{}, rpc.Errorf(rpc.CodeInternalError, "failed to start %s: %v", b.Bash, perr)
	}
	out := newOutput(MaxOutput)
	read := make(chan struct{})
	go collect(pr, out, read)
	return b.wait(ctx, c, sess, kill, out, pr, read), nil
}

// plan is the call's sandbox plan running Bash with exec traced: the
// call's own, or, without one, an Unsandboxed plan that restricts nothing
// but still goes through the helper (the call keeps the server's rights).
func (b *TracedRunner) plan(c *Call) sandbox.Plan {
	p := sandbox.Plan{Unsandboxed: true}
	if c.Plan != nil {
		p = *c.Plan
	}
	p.Argv = []string{b.Bash, "-lc", c.Command}
	switch {
	case c.Login:
	case strings.Contains(filepath.Base(b.Bash), "bash"):
		p.Argv = []string{b.Bash, "--norc", "-c", c.Command}
	default: // dash, zsh, ...: no --norc
		p.Argv = []string{b.Bash, "-c", c.Command}
	}
	p.Dir = c.Workdir
	base := b.Env
	if base == nil {
		base = os.Environ()
	}
	p.Env = withoutWrapperEnv(base)
	p.KeepFD = 0
	p.TraceExecFD = sandbox.KeepFDFor(&p)
	return p
}

// wait waits for Bash, the timeout or ctx (then it calls kill), then for
// the output (with the grace period), and builds the result; the caller
// then ends the session and the leaf, which kills whatever is left.
func (b *TracedRunner) wait(ctx context.Context, c *Call, sess *ptrace.Session, kill func(), out *output, pr *os.File, read chan struct{}) Result {
	start := time.Now()
	c.Stopwatch.Start()
	defer c.Stopwatch.Stop()
	timedOut := false
	select {
	case <-sess.Exited():
	case <-c.Expired:
		timedOut = true
		kill()
	case <-ctx.Done():
		kill()
	}
	duration := time.Since(start)
	grace := b.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	t := time.NewTimer(grace)
	select {
	case <-read:
	case <-t.C:
	}
	t.Stop()
	pr.Close() // ends collect if a background process still holds the pipe
	<-read
	res := Result{ExitCode: sess.ExitCode(), Output: out.String(), Duration: duration, TimedOut: timedOut}
	if timedOut {
		res.ExitCode = 124
	}
	return res
}

// withoutWrapperEnv is env without the wrapper protocol's variables.
func withoutWrapperEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case escalate.SocketEnv, escalate.BashExecWrapperEnv, escalate.ExecWrapperEnv:
			continue
		}
		out = append(out, kv)
	}
	return out
}

// closeFiles closes every file of fs.
func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
