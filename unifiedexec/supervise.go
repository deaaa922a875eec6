package unifiedexec

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// SuperviseOptions configure Supervise.
type SuperviseOptions struct {
	// Path is the codex binary, used for the first start and every
	// restart. A path (one with a separator) is run as given. Empty, or a
	// bare name, is looked up in $PATH once, by Supervise (never the
	// calling program itself), and used only if its --version line says it
	// is this project's exec-server: the Codex CLI is also called codex
	// (docs/client.md §3.1). A codex binary supervising its own child
	// passes "/proc/self/exe", so that a restart runs the same image even if
	// its file was replaced meanwhile.
	Path string
	// Args are appended after `exec-server --listen stdio`.
	Args []string
	// Env is the child's environment; nil inherits ours.
	Env []string
	// Stderr receives the child's logs; nil discards them.
	Stderr io.Writer
	// MaxRestarts bounds how often a dead child is restarted over the
	// client's life: 0 means 3, negative means never.
	MaxRestarts int
	// Backoff is the delay before the first restart, doubled for each
	// further one; 0 means 200 ms.
	Backoff time.Duration
	// Logger receives client logs (connection loss, recovery, protocol
	// oddities); nil means none.
	Logger *slog.Logger
}

// Supervise starts `codex exec-server --listen stdio` as a child, speaks
// the protocol over its stdin/stdout and performs the handshake. When the
// child dies, its processes fail with an error wrapping ErrTransport and a
// new child (a new session) is started, up to MaxRestarts times with
// backoff; calls made meanwhile wait for it. Close stops the child with
// SIGTERM, then SIGKILL after 2 s. ctx bounds only the first start.
func Supervise(ctx context.Context, opts SuperviseOptions) (*Client, error) {
	if opts.Path == "" || filepath.Base(opts.Path) == opts.Path {
		exe, err := findOurCodex(ctx, opts)
		if err != nil {
			return nil, err
		}
		opts.Path = exe
	}
	if opts.MaxRestarts == 0 {
		opts.MaxRestarts = 3
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 200 * time.Millisecond
	}
	// A child that fails to start or to answer the handshake is retried
	// like a child that died, up to MaxRestarts times with backoff.
	backoff := opts.Backoff
	for attempt := 0; ; attempt++ {
		c, err := newClient(ctx, &stdioConnector{opts: opts}, opts.Logger, "", false)
		if err == nil || opts.MaxRestarts < 0 || attempt >= opts.MaxRestarts || ctx.Err() != nil {
			if err != nil && attempt > 0 {
				err = fmt.Errorf("starting the exec-server child failed %d times: %w", attempt+1, err)
			}
			return c, err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		backoff *= 2
	}
}

// stdioConnector runs the supervised child. Its fields are used by the
// monitor goroutine only, except child, which is guarded by mu.
type stdioConnector struct {
	opts     SuperviseOptions
	restarts int

	mu    sync.Mutex
	child *child // guarded by mu: the current child
}

// child is one running server process.
type child struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd.Wait returned
	err  error         // cmd.Wait's result, set before done is closed
}

func (s *stdioConnector) connect(ctx context.Context, c *Client) (*rpc.Conn, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	growPipe(outR)
	cmd := exec.Command(s.opts.Path, append([]string{"exec-server", "--listen", "stdio"}, s.opts.Args...)...)
	cmd.Env = s.opts.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, s.opts.Stderr
	ownProcessGroup(cmd)
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting exec-server: %w", err)
	}
	ch := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		// Ends when the child exits; stop and recover always wait for it.
		ch.err = cmd.Wait()
		close(ch.done)
	}()
	s.mu.Lock()
	s.child = ch
	s.mu.Unlock()
	closer := closeBoth{inW, outR}
	return c.newConn(rpc.NewStdioFramer(outR, inW, closer, wire.LabelStdio, maxMessageBytes), false), nil
}

// closeBoth closes our ends of the child's stdin and stdout pipes.
type closeBoth [2]*os.File

func (b closeBoth) Close() error {
	err := b[0].Close()
	b[1].Close()
	return err
}

// reap ends the current child: SIGTERM unless it already exited, SIGKILL
// after 2 s, and waits for it.
func (s *stdioConnector) reap() error {
	s.mu.Lock()
	ch := s.child
	s.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch.done:
		return ch.err
	default:
	}
	_ = ch.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-ch.done:
	case <-t.C:
		_ = ch.cmd.Process.Kill()
		<-ch.done
	}
	return ch.err
}

func (s *stdioConnector) recover(ctx context.Context, c *Client, reason string) (*rpc.Conn, error) {
	err := s.reap()
	why := "supervised exec-server exited"
	if err != nil {
		why += ": " + err.Error()
	}
	lost := transportError(why)
	c.mu.Lock()
	procs := c.takeProcs()
	c.mu.Unlock()
	for _, p := range procs {
		p.failWith(lost)
	}
	for {
		if s.opts.MaxRestarts < 0 || s.restarts >= s.opts.MaxRestarts {
			return nil, fmt.Errorf("%w; restart limit (%d) reached", lost, max(s.opts.MaxRestarts, 0))
		}
		delay := s.opts.Backoff << s.restarts
		s.restarts++
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		conn, err := s.connect(ctx, c)
		if err == nil {
			if err = c.handshake(ctx, conn, ""); err == nil {
				c.log.Info("exec-server child restarted", "restart", s.restarts)
				return conn, nil
			}
			conn.Close()
			conn.Wait()
			_ = s.reap()
		}
		c.log.Warn("exec-server restart failed", "error", err)
	}
}

func (s *stdioConnector) stop() { _ = s.reap() }

// pid returns the current child's pid, or 0.
func (s *stdioConnector) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.child == nil {
		return 0
	}
	return s.child.cmd.Process.Pid
}

// ServerPID returns the pid of the supervised exec-server child, or 0 for
// a WebSocket client. It is meant for diagnostics and tests.
func (c *Client) ServerPID() int {
	if s, ok := c.tr.(*stdioConnector); ok {
		return s.pid()
	}
	return 0
}

// ourVersionLine is the --version line of this project's binary
// (versionLine in cli/version.go): "codex VERSION
// (exec-server protocol X.Y.Z)". The Codex CLI prints "codex-cli X.Y.Z".
var ourVersionLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^codex \S+ \(exec-server protocol [0-9][^()\s]*\)$`)
})

// versionCheckTimeout bounds the --version run of a candidate binary.
const versionCheckTimeout = 5 * time.Second

// findOurCodex looks opts.Path (default "codex") up in $PATH and returns it
// if its --version line is ours; otherwise an error that names what was
// found and how to choose a binary (docs/client.md §3.1).
func findOurCodex(ctx context.Context, opts SuperviseOptions) (string, error) {
	name := opts.Path
	if name == "" {
		name = "codex"
	}
	exe, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("locating the codex binary: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, versionCheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "--version")
	cmd.Env = opts.Env
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	line, _, more := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if err == nil && !more && ourVersionLine().MatchString(line) {
		return exe, nil
	}
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	why := fmt.Sprintf("its --version printed %q", line)
	switch {
	case err != nil:
		why += fmt.Sprintf(" (%v)", err)
	case more:
		why += " and more lines"
	}
	return "", fmt.Errorf("the %s found in $PATH (%s) is not this project's codex exec-server: %s, not \"codex VERSION (exec-server protocol X.Y.Z)\"; set SuperviseOptions.Path to the path of our binary", name, exe, why)
}
