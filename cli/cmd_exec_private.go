package cli

// The private exec-server of `codex exec run` without --server
// (docs/client.md §13). It runs inside the exec run process, on
// goroutines that privateServer owns, and speaks to the run's client over
// two pipes: one start of the binary per run instead of two. It is the
// server `codex exec-server --listen stdio --log-level warn
// --shutdown-grace 0` would be (the same flags, CODEX_EXEC_SERVER_*
// variables and config.toml, through execServerSetup), with its watchdog,
// which now watches the exec run process itself: a SIGKILL of exec run
// leaves no command running (docs/operations.md §5). The exec run process
// is never sandboxed; sandboxed commands go through the re-executed
// helper as with any server.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/codexec/codex/execserver"
	"github.com/codexec/codex/unifiedexec"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// privateServerArgs are the exec-server flags of the private server. Its
// log shares our stderr: only warnings and errors belong there, not its
// lifecycle lines. It has no grace: its input ends before the run did
// only when the client failed, and then no process may outlive the run
// (a stdio server otherwise lets the processes run on for the grace,
// 5 s, and then gives them 5 s more after SIGTERM).
var privateServerArgs = []string{"--listen", "stdio", "--log-level", "warn", "--shutdown-grace", "0"}

// privateServer is the owner of the private server's goroutines: the one
// that runs it (and, through execserver.Run and withSurroundings, every
// goroutine and process the server starts, the watchdog included).
type privateServer struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the server returned and its pipe ends are closed
}

// startPrivateServer builds the private server's configuration from
// privateServerArgs and starts it on a goroutine. It returns the client's
// ends of the two pipes: r, the server's output, and w, its input (pass
// them to unifiedexec.Attach). A configuration the server refuses is an
// error here; a failure to start (the watchdog, the registry) is printed
// to stderr, as exec-server prints it, and ends the server's output.
func startPrivateServer(app *cli.App) (srv *privateServer, r, w *os.File, err error) {
	sc, err := privateServerContext(app, privateServerArgs)
	if err != nil {
		return nil, nil, nil, err
	}
	setup, err := execServerSetup(sc)
	if err != nil {
		return nil, nil, nil, err
	}
	logger := setup.logger
	inR, inW, err := os.Pipe() // client → server
	if err != nil {
		return nil, nil, nil, err
	}
	outR, outW, err := os.Pipe() // server → client
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, nil, err
	}
	growPipe(outW)
	cfg := setup.cfg
	cfg.Stdin, cfg.Stdout, cfg.URLOut = inR, outW, nil
	ctx, cancel := context.WithCancel(context.Background())
	srv = &privateServer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(srv.done)
		defer outW.Close() // the client reads the end of the server's output
		defer inR.Close()
		defer func() { _ = logger.Sync() }()
		// Not the root context: a SIGINT or SIGTERM of exec run is the
		// command's (forwarded by unifiedexec.Run), not a drain of the
		// server; and no second-signal hurry, which has no grace to cut.
		err := withSurroundings(sc, &cfg, logger, func() error { return execserver.Run(ctx, cfg, logger) })
		if err != nil && err.Error() != "" {
			fmt.Fprintln(os.Stderr, "codex: exec-server: "+err.Error())
		}
	}()
	return srv, outR, inW, nil
}

// stop ends the server and waits for it: its context is cancelled, so
// that it drains at once (SIGKILL, no grace) if its input has not ended
// yet (the client's Close ends it first), and then it stops the watchdog
// and its listeners. Every step of execserver.Run's shutdown is bounded
// (docs/operations.md §5), so the wait is. stop is called once, after the
// client's Close, on every path that started the server.
func (s *privateServer) stop() {
	s.cancel()
	<-s.done
}

// privateServerContext parses args with the flags of `codex exec-server`:
// their defaults, their CODEX_EXEC_SERVER_* variables and the command
// line, in that order, as the command itself would. The context has no
// parent: no flag of `exec run` can shadow one of the server's.
func privateServerContext(app *cli.App, args []string) (*cli.Context, error) {
	cmd := execServerCommand()
	cmd.HelpName = "exec-server"
	set := flag.NewFlagSet(cmd.Name, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, f := range cmd.Flags {
		if err := f.Apply(set); err != nil {
			return nil, err
		}
	}
	if err := set.Parse(args); err != nil {
		return nil, err
	}
	c := cli.NewContext(app, set, nil)
	c.Command = cmd
	return c, nil
}

// privateServerError is the failure of exec run to set up its private
// server: exit 255, as when a server cannot be reached.
func privateServerError(err error) error {
	msg := err.Error()
	var ue *usageError
	if errors.As(err, &ue) {
		msg = ue.msg
	}
	return &unifiedexec.RunError{Code: 255, Err: errors.New("private exec-server: " + msg)}
}

// serverPipeBytes is the capacity asked for the pipe that carries the
// private server's output, as unifiedexec does for a supervised child's:
// with the default 64 KiB, each large process/output line crosses the
// pipe in several pieces, each a wake-up of both ends.
const serverPipeBytes = 1 << 20

// growPipe raises the capacity of the pipe behind f, best effort.
func growPipe(f *os.File) {
	if sc, err := f.SyscallConn(); err == nil {
		_ = sc.Control(func(fd uintptr) {
			_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, serverPipeBytes)
		})
	}
}
