package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/unifiedexec"
	"github.com/codexec/codex/wire"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// exitTimeout is the exit code of `exec run` when --timeout is hit.
const exitTimeout = 124

func execCommand() *cli.Command {
	return &cli.Command{
		Name:  "exec",
		Usage: "client commands for an exec-server",
		Subcommands: []*cli.Command{{
			Name:      "run",
			Usage:     "run one command through an exec-server and exit with its code",
			ArgsUsage: "-- CMD [ARGS...]",
			Description: `Without --server, a private "exec-server --listen stdio" child is supervised.
stdin is forwarded (EOF closes the command's stdin); stdout and stderr are
streamed. SIGINT interrupts the command (Ctrl-C byte in --tty mode), SIGTERM
terminates it with a 2 s grace, SIGWINCH resizes the PTY. The exit code is the
command's (128+N after signal N), 124 after --timeout. The bearer token for
--server comes from --token-file or $CODEX_EXEC_SERVER_TOKEN (--token works but
shows it in ps); it is removed from the environment passed on.`,
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "server", Usage: "exec-server `URL` (ws://HOST:PORT); default: a supervised stdio child"},
				&cli.StringFlag{Name: "token-file", Usage: "`FILE` holding the bearer token for --server (surrounding whitespace trimmed)"},
				&cli.StringFlag{Name: "token", Usage: "bearer `TOKEN` for --server; visible to every local user in ps: prefer --token-file or $" + tokenEnv},
				&cli.StringFlag{Name: "cwd", Usage: "working `DIR` of the command (default: the server's)"},
				&cli.StringSliceFlag{Name: "env", Usage: "`K=V` laid over the server environment (repeatable)"},
				&cli.BoolFlag{Name: "tty", Usage: "run the command on a PTY"},
				&cli.StringFlag{Name: "sandbox", Usage: "`MODE`: read-only, workspace-write or danger-full-access"},
				&cli.StringFlag{Name: "permission-profile", Usage: "permission profile `JSON`, or @FILE"},
				&cli.DurationFlag{Name: "timeout", Usage: "terminate the command after `DURATION` and exit 124"},
				&cli.Int64Flag{Name: "output-bytes-cap", Usage: "stop forwarding a stream after `N` bytes (0: no cap)"},
			},
			Action: runExec,
		}},
	}
}

func runExec(cctx *cli.Context) error {
	// The token never travels further: not to a supervised server, nor to
	// the commands it runs.
	envToken, _ := os.LookupEnv(tokenEnv)
	_ = os.Unsetenv(tokenEnv)
	if cctx.IsSet("token") {
		fmt.Fprintln(os.Stderr, "codex: warning: --token shows the token to every local user (ps, /proc); use --token-file or $"+tokenEnv)
	}
	argv := cctx.Args().Slice()
	if len(argv) == 0 {
		return cli.Exit("exec run: missing command (use -- CMD ARGS...)", 2)
	}
	profile, err := execProfile(cctx.String("sandbox"), cctx.String("permission-profile"))
	if err != nil {
		return cli.Exit("exec run: "+err.Error(), 2)
	}
	env := map[string]string{}
	for _, kv := range cctx.StringSlice("env") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return cli.Exit(fmt.Sprintf("exec run: --env %q: expected K=V", kv), 2)
		}
		env[k] = v
	}
	// The root context ends on SIGINT/SIGTERM, which we forward instead.
	ctx := context.WithoutCancel(cctx.Context)
	var client *unifiedexec.Client
	if url := cctx.String("server"); url != "" {
		var token string
		if token, err = execToken(cctx, envToken); err != nil {
			return cli.Exit("exec run: "+err.Error(), 2)
		}
		client, err = unifiedexec.Dial(ctx, url, unifiedexec.DialOptions{Token: token})
	} else {
		// Our running image, not our path: a command may replace the file
		// before a restart.
		client, err = unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{Path: sandbox.SelfExe, Stderr: os.Stderr})
	}
	if err != nil {
		return cli.Exit("exec run: "+err.Error(), 1)
	}
	defer client.Close()

	cwd := client.Environment().Cwd
	if d := cctx.String("cwd"); d != "" {
		if cwd, err = filepath.Abs(d); err != nil {
			return cli.Exit("exec run: "+err.Error(), 2)
		}
	}
	tty := cctx.Bool("tty")
	limit := cctx.Int64("output-bytes-cap")
	opts := unifiedexec.StartOptions{
		Argv: argv, Cwd: cwd, Env: env, TTY: tty, PipeStdin: !tty,
		EnvPolicy: &wire.EnvPolicy{Inherit: "all", Exclude: []string{}, Set: map[string]string{}, IncludeOnly: []string{}},
		OnOutput:  cappedWriter(limit),
	}
	if tty {
		if ws, err := unix.IoctlGetWinsize(int(os.Stdin.Fd()), unix.TIOCGWINSZ); err == nil && ws.Row > 0 && ws.Col > 0 {
			opts.Size = &wire.Size{Rows: ws.Row, Cols: ws.Col}
		}
		// The remote PTY does the echo and line editing; ours stays out
		// of the way until we exit.
		defer makeRaw(os.Stdin)()
	}
	if profile != nil {
		if opts.Sandbox, err = wireSandbox(*profile, cwd); err != nil {
			return cli.Exit("exec run: "+err.Error(), 2)
		}
	}
	// Subscribe before the start so that no early signal is lost.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGWINCH)
	defer signal.Stop(sigs)

	p, err := client.Start(ctx, opts)
	if err != nil {
		return cli.Exit("exec run: "+err.Error(), 1)
	}
	go forwardStdin(ctx, p) // ends with our stdin or the process; not waited for
	timedOut := false
	var timeout <-chan time.Time
	if d := cctx.Duration("timeout"); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case <-p.Done():
			status, err := p.Wait(ctx)
			if timedOut {
				return cli.Exit("", exitTimeout)
			}
			if err != nil {
				return cli.Exit("exec run: "+err.Error(), 1)
			}
			if status.Code < 0 {
				return cli.Exit("", 1)
			}
			return cli.Exit("", status.Code)
		case <-timeout:
			timedOut = true
			if _, err := p.Terminate(ctx, 0); err != nil {
				return cli.Exit("exec run: "+err.Error(), exitTimeout)
			}
		case s := <-sigs:
			handleSignal(ctx, p, s.(syscall.Signal), tty)
		}
	}
}

// handleSignal forwards one signal received by `exec run` to the command.
func handleSignal(ctx context.Context, p *unifiedexec.Process, s syscall.Signal, tty bool) {
	var err error
	switch s {
	case syscall.SIGINT:
		if tty {
			err = p.Write(ctx, []byte{3})
		} else {
			err = p.Signal(ctx)
		}
	case syscall.SIGTERM:
		_, err = p.Terminate(ctx, 2*time.Second)
	case syscall.SIGWINCH:
		if !tty {
			return
		}
		ws, werr := unix.IoctlGetWinsize(int(os.Stdin.Fd()), unix.TIOCGWINSZ)
		if werr != nil || ws.Row == 0 || ws.Col == 0 {
			return
		}
		err = p.Resize(ctx, ws.Row, ws.Col)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "codex: forwarding %v: %v\n", s, err)
	}
}

// forwardStdin copies our stdin to the process; EOF closes its stdin.
func forwardStdin(ctx context.Context, p *unifiedexec.Process) {
	buf := make([]byte, 32<<10)
	for {
		n, err := os.Stdin.Read(buf)
		if n > 0 {
			if werr := p.Write(ctx, append([]byte(nil), buf[:n]...)); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				_ = p.CloseStdin(ctx)
			}
			return
		}
	}
}

// cappedWriter returns an OnOutput callback writing each stream to our own
// stdout/stderr, dropping a stream's bytes beyond limit (0: no cap).
func cappedWriter(limit int64) func(unifiedexec.Chunk) {
	var mu sync.Mutex
	written := map[string]int64{}
	return func(ch unifiedexec.Chunk) {
		mu.Lock()
		defer mu.Unlock()
		data := ch.Data
		if limit > 0 {
			room := max(limit-written[ch.Stream], 0)
			if int64(len(data)) > room {
				data = data[:room]
			}
			written[ch.Stream] += int64(len(data))
		}
		if ch.Stream == "stderr" {
			_, _ = os.Stderr.Write(data)
		} else {
			_, _ = os.Stdout.Write(data)
		}
	}
}

// execProfile resolves --sandbox or --permission-profile (not both); nil
// means no sandbox.
func execProfile(mode, profile string) (*sandbox.Profile, error) {
	if mode != "" && profile != "" {
		return nil, errors.New("--sandbox and --permission-profile cannot be combined")
	}
	var p sandbox.Profile
	switch mode {
	case "":
	case "read-only":
		p = sandbox.ReadOnly(false)
		return &p, nil
	case "workspace-write":
		p = sandbox.WorkspaceWrite(nil, false, false, false)
		return &p, nil
	case "danger-full-access":
		p = sandbox.DangerFullAccess()
		return &p, nil
	default:
		return nil, fmt.Errorf("--sandbox %q: expected read-only, workspace-write or danger-full-access", mode)
	}
	if profile == "" {
		return nil, nil
	}
	raw := []byte(profile)
	if name, ok := strings.CutPrefix(profile, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("--permission-profile: %w", err)
		}
		raw = b
	}
	p, err := sandbox.ParseProfile(raw)
	if err != nil {
		return nil, fmt.Errorf("--permission-profile: %w", err)
	}
	return &p, nil
}

// wireSandbox builds the process/start sandbox object (protocol.md §8.1)
// with cwd (a URI or an absolute path) as cwd and only workspace root.
func wireSandbox(p sandbox.Profile, cwd string) ([]byte, error) {
	perms, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	path, err := rpc.ParsePath(cwd)
	if err != nil {
		return nil, fmt.Errorf("cwd %q: %w", cwd, err)
	}
	uri := rpc.FileURI(path.Native)
	return json.Marshal(map[string]any{
		"permissions":    json.RawMessage(perms),
		"cwd":            uri,
		"workspaceRoots": []string{uri},
	})
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
