package unifiedexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/codexec/codex/wire"
)

// Exit codes of Run besides the command's own, in the convention of
// ssh(1), env(1), timeout(1) and the shells.
const (
	ExitTimeout       = 124 // RunOptions.Timeout expired (timeout(1))
	ExitBadCwd        = 125 // the working directory does not exist (env --chdir)
	ExitNotExecutable = 126 // the program exists but cannot be executed
	ExitNotFound      = 127 // the program was not found
	ExitFailure       = 255 // connection, authentication or protocol failure (ssh)
)

// stopGrace bounds how long Run waits for the server to confirm that the
// command was killed when Run ends early.
const stopGrace = 2 * time.Second

// RunOptions describe one command run to completion by Run, the way
// `ssh host cmd` or `docker exec` run one. Argv is required; every other
// field has a usable zero value.
type RunOptions struct {
	// Argv is the command; Argv[0] is resolved with the child's PATH.
	Argv []string
	// Cwd is the command's working directory (absolute path or file://
	// URI); empty means the server's.
	Cwd string
	// Env is laid over the server's environment, which the command
	// inherits in full.
	Env map[string]string
	// TTY runs the command on a PTY; Size, when set, reports the caller's
	// terminal size for the start and for each SIGWINCH.
	TTY  bool
	Size func() (wire.Size, bool)
	// Permissions is a sandbox permission profile (docs/protocol.md §8.1) applied
	// with Cwd as the only workspace root; nil means no sandbox.
	Permissions json.RawMessage
	// Stdin is copied to the command; EOF closes its stdin. Nil means the
	// command's stdin is /dev/null (or, with TTY, nothing is typed). A
	// Stdin with SetReadDeadline (an *os.File on a pipe, a net.Conn) is
	// unblocked and its copier waited for before Run returns; the copier of
	// any other reader ends at its next Read after Run returned.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output (the PTY stream goes
	// to Stdout); nil discards it. A failed write (EPIPE: the reader went
	// away) kills the command and Run returns 128+SIGPIPE, as a local
	// command would die. An *os.File on a pipe is grown (on Linux, to
	// 1 MiB) when large output streams to it, so that each chunk is
	// written at once.
	Stdout, Stderr io.Writer
	// OutputBytesCap stops forwarding each stream after so many bytes; 0
	// or NoOutputBytesCap means no cap.
	OutputBytesCap int64
	// Timeout, when positive, sends SIGTERM to the command after it
	// elapses, and SIGKILL KillAfter later when KillAfter is positive
	// (timeout(1) semantics: exit ExitTimeout, or 137 after the SIGKILL).
	Timeout, KillAfter time.Duration
	// Signals, when set, delivers the signals the caller received: SIGINT
	// interrupts the command (the Ctrl-C byte with TTY), SIGTERM and SIGHUP
	// terminate it (SIGKILL 2 s later), SIGWINCH resizes the PTY. Others
	// are ignored.
	Signals <-chan os.Signal
}

// RunError is a failure of Run other than the command's own exit: Code is
// the exit code to use (ExitNotFound, ExitFailure, ...) and Err says what
// failed in one line.
type RunError struct {
	Code int
	Err  error
}

func (e *RunError) Error() string { return e.Err.Error() }
func (e *RunError) Unwrap() error { return e.Err }

// Failure wraps an error of connecting to a server (Dial, Supervise) as a
// RunError with ExitFailure, for callers that report it like Run's own.
func Failure(err error) *RunError { return &RunError{Code: ExitFailure, Err: err} }

// Run starts o.Argv on c, forwards stdin, output and signals, and waits for
// the command to finish. It returns the exit code to report: the
// command's (128+N after signal N), ExitTimeout after o.Timeout, or, with
// a *RunError, the code of Run's own failure. Whatever ends Run, the
// command is not left running: it is killed when Run returns early. Run
// does not close c: what the command left running in the background lives
// as long as c's session, which c.Close ends (`codex exec run` does: no
// process outlives it). ctx bounds the whole run; its end kills the
// command.
func Run(ctx context.Context, c *Client, o RunOptions) (int, error) {
	if len(o.Argv) == 0 {
		return ExitFailure, &RunError{Code: ExitFailure, Err: errors.New("missing command")}
	}
	cwd := o.Cwd
	if cwd == "" {
		cwd = c.Environment().Cwd
	}
	opts, out, err := o.startOptions(cwd)
	if err != nil {
		return ExitFailure, &RunError{Code: ExitFailure, Err: err}
	}
	p, err := c.Start(ctx, opts)
	if err != nil {
		rerr := startFailure(ctx, c, o.Argv[0], cwd, err)
		return rerr.Code, rerr
	}
	r := &run{o: o, p: p, out: out}
	stdinDone := r.copyStdin(ctx)
	code, err := r.wait(ctx)
	r.stop()
	stdinDone()
	return code, err
}

// startOptions builds the StartOptions of o with cwd, and the output
// forwarder that reports a failed write.
func (o RunOptions) startOptions(cwd string) (StartOptions, *forwarder, error) {
	out := newForwarder(o.Stdout, o.Stderr, o.OutputBytesCap)
	opts := StartOptions{
		Argv: o.Argv, Cwd: cwd, Env: o.Env, TTY: o.TTY, PipeStdin: o.Stdin != nil && !o.TTY,
		Stdout: out.writer(0), Stderr: out.writer(1),
	}
	if o.TTY && o.Size != nil {
		if size, ok := o.Size(); ok {
			opts.Size = &size
		}
	}
	if o.Permissions != nil {
		sb, err := wireSandbox(o.Permissions, cwd)
		if err != nil {
			return StartOptions{}, nil, err
		}
		opts.Sandbox = sb
	}
	return opts, out, nil
}

// wireSandbox builds the process/start sandbox object (docs/protocol.md §8.1)
// with cwd (a URI or an absolute path) as cwd and only workspace root.
func wireSandbox(perms json.RawMessage, cwd string) ([]byte, error) {
	path, err := wire.ParsePath(cwd)
	if err != nil {
		return nil, fmt.Errorf("cwd %q: %w", cwd, err)
	}
	uri := wire.FileURI(path.Native)
	return json.Marshal(map[string]any{"permissions": perms, "cwd": uri, "workspaceRoots": []string{uri}})
}

// run is the state of one Run after the start.
type run struct {
	o        RunOptions
	p        *Process
	out      *forwarder
	timedOut bool
}

// wait forwards signals and the timeout until the process is done, and
// returns the exit code.
func (r *run) wait(ctx context.Context) (int, error) {
	var timeout <-chan time.Time
	if r.o.Timeout > 0 {
		t := time.NewTimer(r.o.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case <-r.p.Done():
			return r.exitCode(ctx)
		case <-r.out.failed:
			r.kill(ctx)
			_, _ = r.p.Wait(ctx)
			return 128 + int(syscall.SIGPIPE), nil
		case <-timeout:
			r.timedOut = true
			if err := r.terminate(ctx, r.o.KillAfter); err != nil {
				return ExitFailure, &RunError{Code: ExitFailure, Err: fmt.Errorf("timeout: %w", err)}
			}
		case s := <-r.o.Signals:
			r.signal(ctx, s)
		case <-ctx.Done():
			return ExitFailure, &RunError{Code: ExitFailure, Err: ctx.Err()}
		}
	}
}

// exitCode maps the finished process to the exit code of Run.
func (r *run) exitCode(ctx context.Context) (int, error) {
	status, err := r.p.Wait(ctx)
	switch {
	case err != nil:
		return ExitFailure, &RunError{Code: ExitFailure, Err: err}
	case r.timedOut && status.Code == 128+int(syscall.SIGKILL):
		return status.Code, nil
	case r.timedOut:
		return ExitTimeout, nil
	case status.Code < 0:
		return ExitFailure, &RunError{Code: ExitFailure, Err: errors.New("the server reported no exit code")}
	}
	return status.Code, nil
}

// terminate sends SIGTERM, and SIGKILL after killAfter when it is
// positive; a zero killAfter sends SIGTERM only (the server's longest
// grace stands for "never").
func (r *run) terminate(ctx context.Context, killAfter time.Duration) error {
	if killAfter <= 0 {
		killAfter = 24 * time.Hour
	}
	_, err := r.p.Terminate(ctx, killAfter)
	return err
}

// kill ends the command at once (SIGKILL to its group), bounded by
// stopGrace; a process already gone is fine.
func (r *run) kill(ctx context.Context) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace)
	defer cancel()
	_, _ = r.p.Terminate(kctx, 0)
}

// stop kills the command unless it is done, and waits (bounded) for the
// server to report it, so that no process outlives Run.
func (r *run) stop() {
	select {
	case <-r.p.Done():
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	r.kill(ctx)
	_, _ = r.p.Wait(ctx)
}
