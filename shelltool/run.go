package shelltool

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
)

// DefaultGrace is how long a call waits for the end of its output after
// Bash exited, for what a background process still holding the pipe
// writes (docs/shell-tool.md §3.3).
const DefaultGrace = 100 * time.Millisecond

// BashRunner runs shell calls with a patched Bash (docs/shell-tool.md §4): under our
// sandbox helper when the call has a plan, with the call's escalate socket
// kept open across the helper's exec, stdin /dev/null, stdout and stderr
// on one pipe, and the wrapper variables set. With Tree, each call runs in
// a cgroup leaf of its own, killed whole when the call ends. The zero value
// is not usable: Bash and Wrapper are required. Safe for concurrent use.
type BashRunner struct {
	// Bash is the path of the patched Bash.
	Bash string
	// Wrapper is the path of codex-execve-wrapper, as the command sees it.
	Wrapper string
	// Env is the base environment of the command; nil means the server's.
	Env []string
	// Grace is the output grace after Bash exits; 0 means DefaultGrace.
	Grace time.Duration
	// Logger receives the runner's logs; nil means none.
	Logger *zap.Logger
	// Tree makes each call's cgroup leaf (docs/shell-tool.md §4.1); nil:
	// calls run without one.
	Tree *proc.TreeKiller
}

var _ Runner = (*BashRunner)(nil)

// Run implements Runner.
func (b *BashRunner) Run(ctx context.Context, c *Call) (Result, error) {
	log := b.Logger
	if log == nil {
		log = zap.NewNop()
	}
	c, release := guardPlaceholders(c, log)
	defer release()
	leaf := callLeaf(b.Tree, log)
	defer leaf.Release() // last: what the kills below left, daemons included
	server, child, err := escalate.NewSocketPair()
	if err != nil {
		return Result{}, err
	}
	defer server.Close()
	esc := escalate.NewPlacedEscalator(log, leaf)
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := escalate.Serve(serveCtx, server, c.Decider, esc, log); err != nil {
			log.Warn("escalate socket failed", zap.Error(err))
		}
	}()
	defer func() {
		stopServe()
		<-served
		esc.KillAll()
	}()

	pr, pw, err := os.Pipe()
	if err != nil {
		child.Close()
		return Result{}, err
	}
	defer pr.Close()
	cmd, w, cleanup, err := b.command(c, child, pw)
	var bash *os.Process
	if err == nil {
		bash, err = startCmd(cmd, leaf)
	}
	cleanup()
	pw.Close()
	child.Close()
	proxy, perr := serveCallProxy(ctx, w, c, log) // also after a failed start
	if proxy != nil {
		defer proxy.Close() // when the call is done
	}
	if err != nil {
		return Result{}, rpc.Errorf(rpc.CodeInternalError, "failed to start %s: %v", b.Bash, err)
	}
	if perr != nil {
		_ = leaf.Kill()
		_ = syscall.Kill(-bash.Pid, syscall.SIGKILL)
		_, _ = bash.Wait()
		return Result{}, rpc.Errorf(rpc.CodeInternalError, "failed to start %s: %v", b.Bash, perr)
	}
	out := newOutput(MaxOutput)
	read := make(chan struct{})
	go collect(pr, out, read)
	res, err := b.wait(ctx, c, bash, out, pr, read, func() {
		// Kill first: a wrapper whose session ended before it died would
		// print its receive error into the output.
		_ = leaf.Kill()
		_ = syscall.Kill(-bash.Pid, syscall.SIGKILL)
		stopServe()
		<-served
		esc.KillAll()
	})
	if leaf == nil {
		killLeftGroup(bash.Pid)
	}
	return res, err
}

// wait waits for Bash, the timeout or ctx, then for the output (with the
// grace period), and builds the result. kill stops the escalations and
// kills Bash's process group and the escalated children.
func (b *BashRunner) wait(ctx context.Context, c *Call, bash *os.Process, out *output, pr *os.File, read chan struct{}, kill func()) (Result, error) {
	start := time.Now()
	c.Stopwatch.Start()
	defer c.Stopwatch.Stop()
	exited := make(chan *os.ProcessState, 1)
	go func() {
		ps, _ := bash.Wait() // our child: it cannot fail
		exited <- ps
	}()
	var ps *os.ProcessState
	timedOut := false
	select {
	case ps = <-exited:
	case <-c.Expired:
		timedOut = true
		kill()
		ps = <-exited
	case <-ctx.Done():
		kill()
		ps = <-exited
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
	res := Result{ExitCode: exitCode(ps), Output: out.String(), Duration: duration, TimedOut: timedOut}
	if timedOut {
		res.ExitCode = 124
	}
	return res, nil
}

// command builds the exec.Cmd of a call: Bash under the sandbox helper
// when the call has a plan, else directly in a process group of its own.
// cleanup closes the files only the start needed. w is the wrapped
// command of a sandboxed call (nil without a plan), whose proxy listeners
// the caller receives after the start.
func (b *BashRunner) command(c *Call, sock, stdout *os.File) (cmd *exec.Cmd, w *sandbox.WrappedCommand, cleanup func(), err error) {
	argv := []string{b.Bash, "-lc", c.Command}
	if !c.Login {
		argv = []string{b.Bash, "--norc", "-c", c.Command}
	}
	base := b.Env
	if base == nil {
		base = os.Environ()
	}
	cleanup = func() {}
	if c.Plan == nil {
		cmd = exec.Command(b.Bash, argv[1:]...)
		cmd.Dir = c.Workdir
		cmd.Env = callEnv(base, 3, b.Wrapper)
		cmd.ExtraFiles = []*os.File{sock}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	} else {
		p := *c.Plan
		p.Argv, p.Dir = argv, c.Workdir
		p.KeepFD = sandbox.KeepFDFor(&p)
		p.Env = callEnv(base, p.KeepFD, b.Wrapper)
		wc, err := sandbox.Wrap(p)
		if err != nil {
			return nil, nil, cleanup, err
		}
		w = &wc
		cleanup = w.Close
		cmd = w.Command(context.Background())
		cmd.ExtraFiles = append(slices.Clone(w.ExtraFiles), sock)
	}
	cmd.Stdout, cmd.Stderr = stdout, stdout
	return cmd, w, cleanup, nil
}

// callEnv is base without the wrapper protocol's variables, plus them
// for this call: the socket's fd number and the wrapper for both the old
// and the new patched-shell variable (docs/shell-tool.md §2.1).
func callEnv(base []string, fd int, wrapper string) []string {
	env := make([]string, 0, len(base)+3)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case escalate.SocketEnv, escalate.BashExecWrapperEnv, escalate.ExecWrapperEnv:
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		escalate.SocketEnv+"="+strconv.Itoa(fd),
		escalate.BashExecWrapperEnv+"="+wrapper,
		escalate.ExecWrapperEnv+"="+wrapper)
}

// exitCode is the shell-style status of a finished process: its exit
// code, or 128+N for a death by signal N.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// errNoBash is the start-up error without a Bash (docs/shell-tool.md §2.1).
var errNoBash = errors.New("CODEX_BASH_PATH must be set")

// ResolveBash returns the Bash to use: flag, else $CODEX_BASH_PATH; an
// error when neither is set.
func ResolveBash(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if v := os.Getenv("CODEX_BASH_PATH"); v != "" {
		return v, nil
	}
	return "", errNoBash
}

// guardPlaceholders makes or shares, for the call's sandboxed run, the
// placeholders of the missing protected names (.git, .agents, .codex
// under a writable root), as every other process that sandboxes in the
// same roots does (sandbox.GuardPlan); release lets them go once Bash has
// exited. The call is copied: the guard records identities in the plan.
func guardPlaceholders(c *Call, log *zap.Logger) (*Call, func()) {
	if c.Plan == nil {
		return c, func() {}
	}
	cc, p := *c, *c.Plan
	cc.Plan = &p
	g := sandbox.GuardPlan(cc.Plan, func(msg, path string, err error) {
		log.Warn(msg, zap.String("path", path), zap.Error(err))
	})
	return &cc, g.Release
}
