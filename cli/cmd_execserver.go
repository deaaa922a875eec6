package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/codexec/codex/execserver"
	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/internal/reap"
	"github.com/codexec/codex/metrics"
	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wsserve"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func execServerCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec-server",
		Usage:     "serve the exec-server JSON-RPC protocol over WebSocket or stdio",
		UsageText: "codex exec-server [--listen ws://IP:PORT | --listen stdio] [flags]",
		Description: `Runs processes (pipes or a PTY) and filesystem calls for a client such as the
Codex CLI. With a ws:// URL it prints the bound URL as the only line on stdout
(use port 0 for an ephemeral port); logs go to stderr. Point the Codex CLI at it
with CODEX_EXEC_SERVER_URL=ws://127.0.0.1:PORT.

A dropped connection detaches its session; the client may resume it with
initialize {resumeSessionId} within --session-ttl. SIGINT/SIGTERM drain the
server: /readyz answers 503, new connections and processes are refused,
every process tree gets SIGTERM and, after --shutdown-grace, SIGKILL; the
clients get the exits, then a close 1001 (going away); exit 0. A second
signal skips the rest of the grace. A stdio server answers every request
it read before its end of input, and lets its processes run for the grace.

command/exec resolves permission profile names, and its default profile,
against $CODEX_HOME/config.toml (default_permissions, [permissions.NAME]),
which -c, --enable, --disable and --strict-config reach as in the Codex
CLI; a file the CLI refuses stops start-up, one it accepts never does
(docs/operations.md §7).

Every flag can also be set by the environment variable shown beside it
(CODEX_EXEC_SERVER_ and the flag's name in upper case, dashes as
underscores); the command line wins. These variables are not passed on to
the commands the server runs.`,
		Flags: bindEnvVars(envPrefix, append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "ws://127.0.0.1:0", Usage: "`URL` to serve: ws://IP:PORT, or stdio (also stdio://)"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "log `LEVEL`: debug, info, warn or error"},
			&cli.StringFlag{Name: "log-format", Value: "console", Usage: "log `FORMAT`: console or json (stderr)"},
			&cli.DurationFlag{Name: "session-ttl", Value: 80 * time.Second, Usage: "`DURATION` a detached session's processes survive for its client to resume it; 0 kills them when the connection drops"},
			&cli.DurationFlag{Name: "exited-retention", Value: 80 * time.Second, Usage: "`DURATION` a finished process stays readable"},
			&cli.IntFlag{Name: "retained-output-bytes", Value: execserver.DefaultRetainedBytes, Usage: "output `BYTES` retained per process for process/read (newest kept)"},
			&cli.IntFlag{Name: "max-processes", Value: 1024, Usage: "`N` live processes allowed per session"},
			&cli.Int64Flag{Name: "max-message-bytes", Value: 64 << 20, Usage: "largest inbound message in `BYTES`; a larger one ends the connection"},
			&cli.Int64Flag{Name: "max-parked-stdin-bytes", Value: execserver.DefaultParkedStdinBytes, Usage: "`BYTES` of a connection's process/write calls that may wait for a full stdin queue; beyond, a write is refused"},
			&cli.IntFlag{Name: "concurrent-requests", Value: 0, Usage: "requests of one connection handled at once: `N`; 0: in order, with long polls parked and control requests answered at once; 1: strictly serial"},
			&cli.Int64Flag{Name: "max-pids-per-process", Value: defaultMaxPids, Usage: "`N` tasks (processes and threads) one command and its descendants may have at once, through its cgroup's pids.max; stops fork bombs; 0: no limit"},
			&cli.StringFlag{Name: "max-memory-per-process", Value: defaultMaxMemory, Usage: "memory.max of each command's cgroup: `SIZE` in bytes, with a K, M or G suffix, or a percentage of the memory the server may use (its cgroup's memory limit, else physical memory); 0: no limit"},
			&cli.StringFlag{Name: "ws-auth", Usage: "WebSocket authentication `MODE`: capability-token (needs --ws-token-file or --ws-token-sha256) or signed-bearer-token (needs --ws-shared-secret-file); /readyz is never gated"},
			&cli.StringFlag{Name: "ws-token-file", Usage: "`FILE` holding the bearer token (surrounding whitespace trimmed)"},
			&cli.StringFlag{Name: "ws-token-sha256", Usage: "SHA-256 `HEX` of the bearer token"},
			&cli.StringFlag{Name: "ws-shared-secret-file", Usage: "`FILE` holding the HS256 key of signed bearer tokens: UTF-8 text, at least 32 bytes once surrounding whitespace is trimmed"},
			&cli.StringFlag{Name: "ws-issuer", Usage: "`ISSUER` a signed token's iss claim must equal (default: not checked)"},
			&cli.StringFlag{Name: "ws-audience", Usage: "`AUDIENCE` a signed token's aud claim must be or contain (default: not checked)"},
			&cli.Int64Flag{Name: "ws-max-clock-skew-seconds", Value: 30, Usage: "`SECONDS` of leeway on a signed token's exp and nbf claims"},
			&cli.StringFlag{Name: "metrics-listen", Usage: "serve Prometheus metrics on http://`IP:PORT`/metrics (port 0: ephemeral; the bound address is logged); off when empty"},
			shutdownGraceFlag,
			&cli.StringFlag{Name: "linux-sandbox-pid-namespace", Value: "isolate", Usage: "`MODE` of the PID namespace of sandboxed commands: isolate (their own) or inherit (the server's: they see every host process, but may signal none outside their sandbox; needs Landlock signal scoping, Linux 6.12)"},
			&cli.BoolFlag{Name: "proxy-private-ips-via-upstream", Usage: "accepted for the Codex CLI's flag set; it steers private destinations of the managed network proxy through an upstream proxy, which ours does not chain to, so it changes nothing"},
			&cli.BoolFlag{Name: "exit-on-stdin-close", Usage: "with a ws:// --listen, shut down (as on SIGTERM) when stdin reaches end of file: a parent that holds our stdin pipe ends us by exiting; stdio mode always ends with its input"},
			pprofFlag,
			initFlag,
			stateDirFlag,
		}, append(fleetFlags, configFlags()...)...)),
		Subcommands: []*cli.Command{generateSchemaCommand()},
		Action:      runExecServer,
	}
}

// listenTarget is a parsed --listen value.
type listenTarget struct {
	stdio bool
	addr  netip.AddrPort
}

// parseListen validates --listen with the reference's error texts.
func parseListen(s string) (listenTarget, error) {
	if s == "stdio" || s == "stdio://" {
		return listenTarget{stdio: true}, nil
	}
	if !strings.HasPrefix(s, "ws://") {
		return listenTarget{}, fmt.Errorf("unsupported --listen URL `%s`; expected `ws://IP:PORT` or `stdio`", s)
	}
	bad := fmt.Errorf("invalid websocket --listen URL `%s`; expected `ws://IP:PORT`", s)
	u, err := url.Parse(s)
	if err != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return listenTarget{}, bad
	}
	ap, err := netip.ParseAddrPort(u.Host)
	if err != nil {
		return listenTarget{}, bad
	}
	return listenTarget{addr: ap}, nil
}

func newLogger(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("invalid --log-level %q", level)
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch format {
	case "json":
		enc = zapcore.NewJSONEncoder(encCfg)
	case "console":
		enc = zapcore.NewConsoleEncoder(encCfg)
	default:
		return nil, fmt.Errorf("invalid --log-format %q", format)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(os.Stderr), lvl)), nil
}

func tokenHash(c *cli.Context) ([]byte, error) {
	mode := c.String("ws-auth")
	file, hexSum := c.String("ws-token-file"), c.String("ws-token-sha256")
	switch mode {
	case "":
		if file != "" || hexSum != "" {
			return nil, fmt.Errorf("--ws-token-file and --ws-token-sha256 need --ws-auth capability-token")
		}
		return nil, nil
	case "capability-token":
	case signedBearerMode:
		if file != "" || hexSum != "" {
			return nil, fmt.Errorf("--ws-token-file and --ws-token-sha256 need --ws-auth capability-token, not %s", mode)
		}
		return nil, nil
	default:
		return nil, fmt.Errorf("unsupported --ws-auth mode %q; expected capability-token or %s", mode, signedBearerMode)
	}
	switch {
	case file != "" && hexSum != "":
		return nil, fmt.Errorf("give either --ws-token-file or --ws-token-sha256, not both")
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading --ws-token-file: %w", err)
		}
		tok := strings.TrimSpace(string(data))
		if tok == "" {
			return nil, fmt.Errorf("--ws-token-file %s is empty", file)
		}
		sum := sha256.Sum256([]byte(tok))
		return sum[:], nil
	case hexSum != "":
		sum, err := hex.DecodeString(hexSum)
		if err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("--ws-token-sha256 must be 64 hex digits")
		}
		return sum, nil
	}
	return nil, fmt.Errorf("--ws-auth capability-token needs --ws-token-file or --ws-token-sha256")
}

// warnUnauthenticated logs a warning when the server listens on an address
// other hosts may reach (anything but loopback, the unspecified addresses
// included) and no --ws-auth mode is set: whoever reaches the port runs
// commands as the server's user.
func warnUnauthenticated(c *cli.Context, target listenTarget, logger *zap.Logger) {
	if target.stdio || target.addr.Addr().IsLoopback() || c.String("ws-auth") != "" {
		return
	}
	logger.Warn("listening on a non-loopback address without authentication: anyone who reaches it can run commands as this user; set --ws-auth",
		zap.String("addr", target.addr.String()))
}

// The defaults of --max-pids-per-process and --max-memory-per-process, the
// same for exec-server commands and exec-mcp-server calls.
const (
	defaultMaxPids   = 4096
	defaultMaxMemory = "50%"
)

// processLimits reads --max-pids-per-process and --max-memory-per-process.
// The memory default, half of the memory the server may use (its cgroup's
// limit in a container, else physical memory), lets one large build run
// while a runaway command cannot push the host, or the container, into its
// own OOM killer: the leaf's memory.max reclaims and then kills inside that
// command only. The share, when a percentage was given, is for the
// start-up log (logMemoryShare).
func processLimits(c *cli.Context) (proc.Limits, *memoryShare, error) {
	pids := c.Int64("max-pids-per-process")
	if pids < 0 {
		return proc.Limits{}, nil, fmt.Errorf("--max-pids-per-process must not be negative")
	}
	share := &memoryShare{given: c.String("max-memory-per-process")}
	mem, err := parseMemory(share.given, func() (int64, error) {
		ceil, err := proc.MemoryLimit()
		share.of = ceil
		return ceil.Bytes, err
	})
	if err != nil {
		return proc.Limits{}, nil, fmt.Errorf("invalid --max-memory-per-process: %w", err)
	}
	share.bytes = mem
	if share.of.Source == "" {
		share = nil // not a percentage
	}
	return proc.Limits{MaxPids: pids, MaxMemory: mem}, share, nil
}

// memoryShare is a --max-memory-per-process percentage and what it was
// taken of.
type memoryShare struct {
	given string
	bytes int64
	of    proc.MemoryCeiling
}

// log notes the resolved limit at info; nothing for nil.
func (m *memoryShare) log(logger *zap.Logger) {
	if m == nil {
		return
	}
	logger.Info("memory limit per process", zap.String("max_memory_per_process", m.given), zap.Int64("bytes", m.bytes),
		zap.Int64("of_bytes", m.of.Bytes), zap.String("of", m.of.Source))
}

// parseMemory parses "N", "N[KMG]" (binary units) or "P%" of the memory
// total returns (MemoryLimit's ceiling). 0 means no limit.
func parseMemory(s string, total func() (int64, error)) (int64, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		pct, err := strconv.ParseFloat(p, 64)
		if err != nil || pct < 0 || pct > 100 {
			return 0, fmt.Errorf("%q: want a percentage from 0 to 100", s)
		}
		if pct == 0 {
			return 0, nil
		}
		t, err := total()
		if err != nil {
			return 0, fmt.Errorf("available memory: %w", err)
		}
		return int64(float64(t) * pct / 100), nil
	}
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		}
		if mult > 1 {
			s = s[:n-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q: want bytes, with an optional K, M or G suffix, or a percentage", s)
	}
	return n * mult, nil
}

// pidNamespaceMode reads --linux-sandbox-pid-namespace: true for inherit.
// Another value is a usage error with the reference's text; inherit on a
// kernel that cannot keep the commands' signals inside their sandbox
// (Landlock ABI 6) stops start-up: we would rather refuse the mode than
// let a sandboxed command kill the server or its watchdog.
func pidNamespaceMode(c *cli.Context) (bool, error) {
	switch v := c.String("linux-sandbox-pid-namespace"); v {
	case "isolate":
		return false, nil
	case "inherit":
		if err := sandbox.SignalScopeAvailable(); err != nil {
			return false, cli.Exit("--linux-sandbox-pid-namespace inherit: "+err.Error(), 1)
		}
		return true, nil
	default:
		return false, usageErrorf(c, "invalid value '%s' for '--linux-sandbox-pid-namespace <MODE>': expected 'isolate' or 'inherit'", v)
	}
}

// sessionTTL is --session-ttl as the registry reads it: 0 there means the
// default, so "none" (0 on the command line) becomes negative.
func sessionTTL(c *cli.Context) time.Duration {
	if ttl := c.Duration("session-ttl"); ttl != 0 {
		return ttl
	}
	return -1
}

func runExecServer(c *cli.Context) error {
	defer surviveBrokenPipe()()
	if c.NArg() > 0 {
		return usageErrorf(c, "unexpected argument %q", c.Args().First())
	}
	s, err := execServerSetup(c)
	if err != nil {
		return err
	}
	defer func() { _ = s.logger.Sync() }()
	if s.target.stdio {
		in, restore := pollableStdin()
		defer restore()
		s.cfg.Stdin = in
	}
	return serve(c, s.cfg, s.target, s.logger)
}

// serverSetup is what `exec-server` builds from its flags, environment
// and config.toml before it serves: the listen target, the logger and the
// execserver configuration (stdio on our stdin and stdout).
type serverSetup struct {
	target listenTarget
	logger *zap.Logger
	cfg    execserver.Config
}

// execServerSetup reads the flags of `exec-server` from c (the command's
// own context, or privateServerContext's for the server of `codex exec
// run`), with the errors exec-server reports, and builds the server's
// configuration. Nothing is started.
func execServerSetup(c *cli.Context) (*serverSetup, error) {
	target, err := parseListen(c.String("listen"))
	if err != nil {
		return nil, usageErrorf(c, "%s", err)
	}
	logger, err := newLogger(c.String("log-level"), c.String("log-format"))
	if err != nil {
		return nil, usageErrorf(c, "%s", err)
	}
	fail := func(err error) (*serverSetup, error) {
		_ = logger.Sync()
		return nil, err
	}
	tokenSum, err := tokenHash(c)
	if err != nil {
		return fail(usageErrorf(c, "%s", err))
	}
	warnUnauthenticated(c, target, logger)
	if f := c.String("ws-token-file"); f != "" {
		sandbox.MaskSecrets(f) // no sandboxed command may read the token
	}
	jwtVerifier, err := signedBearerAuth(c)
	if err != nil {
		return fail(cli.Exit(err.Error(), 2))
	}
	maxMsg := c.Int64("max-message-bytes")
	if maxMsg <= 0 {
		return fail(usageErrorf(c, "--max-message-bytes must be positive"))
	}
	limits, memShare, err := processLimits(c)
	if err != nil {
		return fail(usageErrorf(c, "%s", err))
	}
	maxSessions, maxConns, err := fleetLimits(c)
	if err != nil {
		return fail(usageErrorf(c, "%s", err))
	}
	perms, err := loadPermissions(c, logger)
	if err != nil {
		return fail(cli.Exit(err.Error(), 1))
	}
	grace, err := shutdownGrace(c)
	if err != nil {
		return fail(usageErrorf(c, "%s", err))
	}
	inheritPID, err := pidNamespaceMode(c)
	if err != nil {
		return fail(err)
	}
	memShare.log(logger) // once the flags and the config are known good: an error is one line
	cfg := execserver.Config{
		Stdio: target.stdio,
		Addr:  target.addr,
		Sessions: execserver.SessionConfig{
			SessionTTL:      sessionTTL(c),
			ExitedRetention: c.Duration("exited-retention"),
			RetainedBytes:   c.Int("retained-output-bytes"),
			StdinParkBytes:  c.Int64("max-parked-stdin-bytes"),
			MaxProcesses:    c.Int("max-processes"),
			MaxSessions:     maxSessions,
			BaseEnv:         withoutFlagEnv(os.Environ(), envPrefix, c.Command.Flags),
			Limits:          limits,
			Permissions:     perms,

			InheritPIDNamespace: inheritPID,
		},
		Concurrency: c.Int("concurrent-requests"),
		MaxMessage:  maxMsg,
		TokenSHA256: tokenSum,
		JWT:         jwtVerifier,
		PeerGate:    &wsserve.PeerGate{},
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		URLOut:      os.Stdout,

		ShutdownGrace:  grace,
		MaxConnections: maxConns, // --max-connections (fleetFlags)
	}
	cfg.Extra = fshelper.Handlers(cfg.Sessions.BaseEnv)         // fs calls: the children's env (docs/sandbox.md §3.1)
	cfg.ConnExtra = fshelper.ConnHandlers(cfg.Sessions.BaseEnv) // fs/watchMissing, the file handles, fs/walk, capabilities/discoverV2
	return &serverSetup{target: target, logger: logger, cfg: cfg}, nil
}

// serve runs the server with what surrounds it: the watchdog, the
// reaper, the pprof and metrics listeners (withSurroundings), the stdin
// watch of --exit-on-stdin-close and the second signal's hurry.
func serve(c *cli.Context, cfg execserver.Config, target listenTarget, logger *zap.Logger) error {
	return withSurroundings(c, &cfg, logger, func() error {
		ctx := c.Context
		if c.Bool("exit-on-stdin-close") && !target.stdio {
			var (
				stop func()
				err  error
			)
			if ctx, stop, err = exitOnStdinClose(ctx, logger); err != nil {
				return cli.Exit("--exit-on-stdin-close: "+err.Error(), 1)
			}
			defer stop()
		}
		hurry, stopHurry := secondSignal(ctx)
		defer stopHurry()
		cfg.Hurry = hurry
		return execserver.Run(ctx, cfg, logger)
	})
}

// withSurroundings starts what surrounds every exec-server (the
// watchdog, the orphan reaper of --init, the --debug-pprof and
// --metrics-listen listeners; the last records through cfg), runs run,
// and stops them again in reverse order before it returns run's error.
func withSurroundings(c *cli.Context, cfg *execserver.Config, logger *zap.Logger, run func() error) error {
	// The watchdog first, stopped last: it must know every cgroup and
	// placeholder of the server (docs/operations.md §5).
	stopWatchdog, err := startWatchdog(c, logger, c.String("log-level"), c.String("log-format"))
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	defer stopWatchdog()
	stopReaper, err := startReaper(c, logger)
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	defer stopReaper()
	stopPprof, err := startPprof(c.String(pprofFlag.Name), cfg.PeerGate, logger)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	defer stopPprof()
	stopMetrics, err := startMetrics(c.String("metrics-listen"), cfg, logger)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	defer stopMetrics()
	return run()
}

// The defaults of --max-sessions and --max-connections (docs/operations.md
// §1, §11). They are backstops, not capacity plans: far above what one
// workspace needs (the Codex CLI holds one connection and one session, and
// a resume replaces the connection) and above what our benchmark makes
// within one session TTL, yet low enough that a client stuck in a
// reconnect loop, which leaves a detached session behind every time, is
// refused with a clear error before the server runs out of file
// descriptors or memory. An idle connection costs one descriptor and a few
// goroutines, an idle session its bookkeeping; measured in
// docs/operations.md §11. Operators of shared servers set both from their
// node's capacity; 0 turns a limit off.
const (
	defaultMaxSessions    = 1024
	defaultMaxConnections = 1024
)

// fleetFlags are the flags of the session and connection limits.
var fleetFlags = []cli.Flag{
	&cli.IntFlag{Name: "max-sessions", Value: defaultMaxSessions, Usage: "`N` sessions held at once, attached or detached; at the limit a new session replaces the empty detached one (never ran a process) detached longest, or initialize refuses it (-32011); a resume is never refused; 0: no limit"},
	&cli.IntFlag{Name: "max-connections", Value: defaultMaxConnections, Usage: "`N` WebSocket connections open at once; an upgrade beyond it is refused with 503; 0: no limit"},
}

// fleetLimits reads --max-sessions and --max-connections.
func fleetLimits(c *cli.Context) (sessions, conns int, err error) {
	sessions, conns = c.Int("max-sessions"), c.Int("max-connections")
	if sessions < 0 || conns < 0 {
		return 0, 0, fmt.Errorf("--max-sessions and --max-connections must not be negative")
	}
	return sessions, conns, nil
}

// initFlag makes the server reap orphans as an init process would.
var initFlag = &cli.BoolFlag{
	Name:    "init",
	EnvVars: []string{"CODEX_EXEC_SERVER_INIT"},
	Usage:   "reap orphaned processes: always done as PID 1; otherwise the server becomes a child subreaper for its commands' orphans",
}

// startReaper starts the orphan reaper when the server runs as PID 1 of
// its PID namespace or --init asks for it, and otherwise the reaper of the
// server's own children that nobody owns: a command can make some with
// clone(CLONE_PARENT), which would stay zombies for the server's life.
// The returned function stops it; call it after the server (and its
// children) are done.
func startReaper(c *cli.Context, logger *zap.Logger) (stop func(), err error) {
	if !c.Bool(initFlag.Name) && os.Getpid() != 1 {
		return reap.StartChildren(logger, childReapEvery).Close, nil
	}
	r, err := reap.Start(logger)
	if err != nil {
		return nil, fmt.Errorf("--init: %w", err)
	}
	return r.Close, nil
}

// childReapEvery is the least time between two passes of the reaper of
// unowned children: a burst of exits costs a pass or two.
const childReapEvery = 100 * time.Millisecond

// startMetrics serves the exec-server's metrics on addr (--metrics-listen)
// and records them through cfg; each request passes the peer check of
// cfg.PeerGate first (docs/operations.md §10). It returns the function
// that stops the listener and waits for it, which the caller runs after
// the exec-server returned. An empty addr serves and records nothing.
func startMetrics(addr string, cfg *execserver.Config, logger *zap.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("invalid --metrics-listen %q: want IP:PORT", addr)
	}
	m := metrics.New()
	m.SetBuild(buildVersion(), protocolVersion)
	guard := func(h http.Handler) http.Handler { return cfg.PeerGate.Guard("metrics", logger, h) }
	srv, err := m.Listen(ap.String(), guard)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	cfg.Sessions.Metrics = m
	logger.Info("serving metrics", zap.String("url", "http://"+srv.Addr().String()+"/metrics"))
	if !ap.Addr().IsLoopback() {
		logger.Warn("metrics are served without authentication on a non-loopback address", zap.String("addr", srv.Addr().String()))
	}
	return func() { _ = srv.Close() }, nil
}
