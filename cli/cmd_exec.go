package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/unifiedexec"
	"github.com/codexec/codex/wire"
	"github.com/codexec/codex/wsserve"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Usage:     "client commands for an exec-server",
		UsageText: "codex exec run [flags] -- CMD [ARGS...]",
		Subcommands: []*cli.Command{{
			Name:      "run",
			Usage:     "run one command through an exec-server and exit with its code",
			ArgsUsage: "-- CMD [ARGS...]",
			Description: `Like "ssh host cmd": without --server ($CODEX_EXEC_SERVER_URL), a private
exec-server runs inside this process, set up as "exec-server --listen stdio
--shutdown-grace 0" would be (CODEX_EXEC_SERVER_* variables, config.toml),
with its watchdog. stdin is forwarded unless -n or it is not readable (EOF
closes the command's stdin); stdout and stderr are streamed. SIGINT
interrupts the command (Ctrl-C byte in --tty mode), SIGTERM and SIGHUP
terminate it with a 2 s grace, SIGWINCH resizes the PTY. No process outlives
the run, also when exec run is killed (the watchdog kills what it started).
The exit code is the command's (128+N after signal N); 124 after --timeout
(137 if --kill-after had to kill); 125 for a bad --cwd, 126 for a program
that cannot be executed, 127 for one not found, 255 for connection,
authentication and protocol failures (and a private server that refuses its
settings), 2 for usage errors. The bearer token for --server comes from
--token-file or $CODEX_EXEC_SERVER_TOKEN (--token works but shows it in ps);
it is removed from the environment passed on. A signed token is sent the
same way; a client that holds the server's shared secret can instead mint
one per connection with --token-secret-file (and --token-issuer, --token-audience).`,
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "server", EnvVars: []string{"CODEX_EXEC_SERVER_URL"}, Usage: "exec-server `URL` (ws://HOST:PORT); default: a private exec-server in this process"},
				&cli.StringFlag{Name: "token-file", Usage: "`FILE` holding the bearer token for --server (surrounding whitespace trimmed)"},
				&cli.StringFlag{Name: "token", Usage: "bearer `TOKEN` for --server; visible to every local user in ps: prefer --token-file or $" + tokenEnv},
				&cli.StringFlag{Name: "token-secret-file", Usage: "`FILE` holding the shared secret of a --ws-auth signed-bearer-token server: mint an HS256 token for each connection instead of sending a fixed one"},
				&cli.StringFlag{Name: "token-issuer", Usage: "`ISSUER` in the iss claim of minted tokens (the server's --ws-issuer)"},
				&cli.StringFlag{Name: "token-audience", Usage: "`AUDIENCE` in the aud claim of minted tokens (the server's --ws-audience)"},
				&cli.DurationFlag{Name: "token-lifetime", Value: unifiedexec.DefaultTokenLifetime, Usage: "`DURATION` each minted token is valid"},
				&cli.StringFlag{Name: "cwd", Usage: "working `DIR` of the command (default: the server's)"},
				&cli.StringSliceFlag{Name: "env", Usage: "`K=V` laid over the server environment (repeatable)"},
				&cli.BoolFlag{Name: "tty", Usage: "run the command on a PTY"},
				&cli.StringFlag{Name: "sandbox", Usage: "`MODE`: read-only, workspace-write or danger-full-access"},
				&cli.StringFlag{Name: "permission-profile", Usage: "permission profile `JSON`, or @FILE"},
				&cli.BoolFlag{Name: "no-stdin", Aliases: []string{"n"}, Usage: "do not forward stdin (the command reads /dev/null), as ssh -n"},
				&cli.DurationFlag{Name: "timeout", Usage: "send SIGTERM to the command after `DURATION` and exit 124"},
				&cli.DurationFlag{Name: "kill-after", Usage: "also send SIGKILL `DURATION` after the --timeout SIGTERM (exit 137)"},
				&cli.DurationFlag{Name: "recovery-timeout", Value: 5 * time.Second, Usage: "give up on a lost --server connection after `DURATION` (exit 255)"},
				&cli.Int64Flag{Name: "output-bytes-cap", Usage: "stop forwarding a stream after `N` bytes (0: no cap)"},
			},
			Action: runExec,
		}},
	}
}

func runExec(cctx *cli.Context) error {
	// From here to the end, the private server's closing included: a log
	// line to a stderr whose reader is gone fails instead of ending us
	// before the server stopped (the signals of the run are subscribed
	// further down, and unsubscribed before the server stops).
	defer surviveBrokenPipe()()
	// The token never travels further: not to the private server, nor to
	// the commands it runs.
	envToken, _ := os.LookupEnv(tokenEnv)
	_ = os.Unsetenv(tokenEnv)
	if cctx.IsSet("token") {
		fmt.Fprintln(os.Stderr, "codex: warning: --token shows the token to every local user (ps, /proc); use --token-file or $"+tokenEnv)
	}
	opts, err := execRunOptions(cctx)
	if err != nil {
		return usageErrorf(cctx, "%s", err)
	}
	// The root context ends on SIGINT/SIGTERM, which we forward instead.
	ctx := context.WithoutCancel(cctx.Context)
	client, closeClient, err := execConnect(ctx, cctx, envToken)
	if err != nil {
		var re *unifiedexec.RunError
		if errors.As(err, &re) {
			return cli.Exit("exec run: "+err.Error(), re.Code)
		}
		return usageErrorf(cctx, "%s", err)
	}
	defer closeClient()
	if opts.TTY {
		// The remote PTY does the echo and line editing; ours stays out
		// of the way until we exit.
		defer makeRaw(os.Stdin)()
	}
	// Subscribed before the start so that no early signal is lost; SIGPIPE
	// makes a write to a vanished reader an error the runner handles.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGWINCH, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	opts.Signals = sigs
	code, err := unifiedexec.Run(ctx, client, opts)
	if err != nil {
		return cli.Exit("exec run: "+err.Error(), code)
	}
	return cli.Exit("", code)
}

// execRunOptions turns the flags of `exec run` into RunOptions (without
// Signals).
func execRunOptions(cctx *cli.Context) (unifiedexec.RunOptions, error) {
	argv := cctx.Args().Slice()
	if len(argv) == 0 {
		return unifiedexec.RunOptions{}, errors.New("missing command (use -- CMD ARGS...)")
	}
	o := unifiedexec.RunOptions{
		Argv: argv, Env: map[string]string{}, TTY: cctx.Bool("tty"),
		Stdout: os.Stdout, Stderr: os.Stderr, OutputBytesCap: cctx.Int64("output-bytes-cap"),
		Timeout: cctx.Duration("timeout"), KillAfter: cctx.Duration("kill-after"),
	}
	for _, kv := range cctx.StringSlice("env") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return o, fmt.Errorf("--env %q: expected K=V", kv)
		}
		o.Env[k] = v
	}
	if d := cctx.String("cwd"); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return o, fmt.Errorf("--cwd: %w", err)
		}
		o.Cwd = abs
	}
	profile, err := execProfile(cctx.String("sandbox"), cctx.String("permission-profile"))
	if err != nil {
		return o, err
	}
	if profile != nil {
		if o.Permissions, err = json.Marshal(*profile); err != nil {
			return o, err
		}
	}
	if !cctx.Bool("no-stdin") && stdinReadable(os.Stdin) {
		o.Stdin = os.Stdin
	}
	if o.TTY {
		o.Size = terminalSize
	}
	return o, nil
}

// execConnect dials --server or starts the private server in this
// process (cmd_exec_private.go) and attaches to it. closeClient closes the
// client and then stops and waits for the private server. A connection
// failure is a *unifiedexec.RunError; any other error is a usage error.
func execConnect(ctx context.Context, cctx *cli.Context, envToken string) (client *unifiedexec.Client, closeClient func(), err error) {
	if url := cctx.String("server"); url != "" {
		opts, err := execDialOptions(cctx, envToken)
		if err != nil {
			return nil, nil, err
		}
		client, err := unifiedexec.Dial(ctx, url, opts)
		if err != nil {
			return nil, nil, unifiedexec.Failure(err)
		}
		return client, func() { _ = client.Close() }, nil
	}
	srv, r, w, err := startPrivateServer(cctx.App)
	if err != nil {
		return nil, nil, privateServerError(err)
	}
	client, err = unifiedexec.Attach(ctx, r, w, unifiedexec.AttachOptions{})
	if err != nil {
		srv.stop()
		return nil, nil, unifiedexec.Failure(err)
	}
	return client, func() {
		_ = client.Close()
		srv.stop()
	}, nil
}

// terminalSize reports the size of the terminal on our stdin.
func terminalSize() (wire.Size, bool) {
	ws, err := unix.IoctlGetWinsize(int(os.Stdin.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Row == 0 || ws.Col == 0 {
		return wire.Size{}, false
	}
	return wire.Size{Rows: ws.Row, Cols: ws.Col}, true
}

// makeRaw puts the terminal on fd into raw mode, as cfmakeraw(3) does, so
// that keystrokes (Ctrl-C included, as the byte 0x03) go to the remote PTY
// unprocessed. It returns a function that restores the previous mode, or
// a no-op when fd is not a terminal.
func makeRaw(f *os.File) (restore func()) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return func() {}
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }
}

// execProfile resolves --sandbox or --permission-profile (not both); nil
// means no sandbox.
func execProfile(mode, profile string) (*sandbox.Profile, error) {
	if mode != "" && profile != "" {
		return nil, errors.New("--sandbox and --permission-profile cannot be combined")
	}
	if mode != "" {
		p, err := sandbox.ModeProfile(mode, sandbox.ModeOptions{})
		if err != nil {
			return nil, fmt.Errorf("--sandbox: %w", err)
		}
		return &p, nil
	}
	if profile == "" {
		return nil, nil
	}
	raw, err := jsonArg(profile)
	if err != nil {
		return nil, fmt.Errorf("--permission-profile: %w", err)
	}
	p, err := sandbox.ParseProfile(raw)
	if err != nil {
		return nil, fmt.Errorf("--permission-profile: %w", err)
	}
	return &p, nil
}

// tokenEnv is the environment variable that can carry the bearer token of
// `exec run --server`.
const tokenEnv = "CODEX_EXEC_SERVER_TOKEN"

// execToken returns the bearer token for --server: the content of
// --token-file (whitespace trimmed), else --token, else envToken (the
// value $CODEX_EXEC_SERVER_TOKEN had), else none.
func execToken(cctx *cli.Context, envToken string) (string, error) {
	file := cctx.String("token-file")
	switch {
	case file != "" && cctx.IsSet("token"):
		return "", errors.New("give either --token-file or --token, not both")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("reading --token-file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("--token-file %s is empty", file)
		}
		return t, nil
	case cctx.IsSet("token"):
		return cctx.String("token"), nil
	}
	return envToken, nil
}

// execDialOptions returns the dial options of `exec run --server`: a
// bearer token from execToken, or, with --token-secret-file, an HS256
// token minted for every connection (for a server started with --ws-auth
// signed-bearer-token; the client then holds the shared secret).
func execDialOptions(cctx *cli.Context, envToken string) (unifiedexec.DialOptions, error) {
	opts := unifiedexec.DialOptions{RecoveryTimeout: cctx.Duration("recovery-timeout")}
	file := cctx.String("token-secret-file")
	if file == "" {
		for _, name := range []string{"token-issuer", "token-audience", "token-lifetime"} {
			if cctx.IsSet(name) {
				return opts, fmt.Errorf("--%s needs --token-secret-file", name)
			}
		}
		token, err := execToken(cctx, envToken)
		opts.Token = token
		return opts, err
	}
	if cctx.IsSet("token-file") || cctx.IsSet("token") {
		return opts, errors.New("give either --token-secret-file or a token (--token-file, --token), not both")
	}
	if cctx.Duration("token-lifetime") <= 0 {
		return opts, errors.New("--token-lifetime must be positive")
	}
	secret, err := wsserve.ReadSharedSecret(file)
	if err != nil {
		return opts, fmt.Errorf("--token-secret-file: %w", err)
	}
	opts.TokenSource = unifiedexec.SignedToken{
		Secret:   secret,
		Issuer:   cctx.String("token-issuer"),
		Audience: cctx.String("token-audience"),
		Lifetime: cctx.Duration("token-lifetime"),
	}.Source()
	return opts, nil
}
